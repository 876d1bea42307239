// SigV4 (plugins/common/aws/sigv4.h) against AWS's published vectors. No expected value here is
// computed by this code: each comes from the source named beside it.
//
// - The IAM ListUsers example of AWS's "Signature Version 4 signing process" guide
//   (docs.aws.amazon.com/general/latest/gr/sigv4-*, 20150830T123600Z, us-east-1, iam), as
//   recorded in /work/shared/design/backends-reference.md section 6.
// - AWS's SigV4 test suite (aws-sig-v4-test-suite, 2015 edition: example.amazonaws.com,
//   us-east-1, service "service", AKIDEXAMPLE, 20150830T123600Z): the .creq/.sts/.authz files of
//   get-vanilla, get-vanilla-query-order-key-case, post-vanilla, post-vanilla-query,
//   post-header-key-sort, post-header-value-case, post-x-www-form-urlencoded and
//   post-x-www-form-urlencoded-parameters, as vendored by several SDKs' test suites.
// - The 2011 edition of the same suite (host.foo.com, service "host", a Date header in place of
//   X-Amz-Date), as carried in botocore at commit 879f8440a4e9 (tests/unit/auth/aws4_testsuite/
//   get-vanilla.sreq, get-vanilla-query-order-value.sreq, post-x-www-form-urlencoded.sreq).
//
// The signing of whole EC2 requests (X-Amz-Date, a session token) is checked again, by an
// independent Python implementation, in the fault proxy that every aws_ec2_fake request goes
// through (plugins/common/aws/testing/ec2_fault_proxy.py, --verify-secret).
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "aws/sigv4.h"

namespace tessera::aws {
namespace {

constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const Credentials kExampleKey{"AKIDEXAMPLE", kSecret, ""};

std::string SignatureOf(const std::string& authorization) {
  const auto at = authorization.find("Signature=");
  return at == std::string::npos ? "" : authorization.substr(at + 10);
}

// A 2015-suite request: Host and X-Amz-Date, plus whatever the case adds.
RequestToSign SuiteRequest(std::string method) {
  RequestToSign request;
  request.method = std::move(method);
  request.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  return request;
}

const CredentialScope kSuiteScope{"20150830", "us-east-1", "service"};

std::string SuiteSignature(const RequestToSign& request) {
  return SignatureOf(AuthorizationHeader(request, kExampleKey, kSuiteScope, "20150830T123600Z"));
}

TEST_CASE("sigv4: AWS guide's IAM ListUsers example") {
  RequestToSign request;
  request.method = "GET";
  request.query = {{"Action", "ListUsers"}, {"Version", "2010-05-08"}};
  request.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
                     {"Host", "iam.amazonaws.com"},
                     {"X-Amz-Date", "20150830T123600Z"}};
  const CredentialScope scope{"20150830", "us-east-1", "iam"};
  CHECK(CanonicalRequest(request) ==
        "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
        "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
        "host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
        "content-type;host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(AuthorizationHeader(request, kExampleKey, scope, "20150830T123600Z") ==
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
        "SignedHeaders=content-type;host;x-amz-date, "
        "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

TEST_CASE("sigv4: test suite get-vanilla, step by step") {
  const RequestToSign request = SuiteRequest("GET");
  const std::string canonical = CanonicalRequest(request);
  CHECK(canonical ==
        "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
        "host;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(StringToSign("20150830T123600Z", kSuiteScope, canonical) ==
        "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
        "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  CHECK(AuthorizationHeader(request, kExampleKey, kSuiteScope, "20150830T123600Z") ==
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST_CASE("sigv4: test suite query ordering") {
  RequestToSign request = SuiteRequest("GET");
  request.query = {{"Param2", "value2"}, {"Param1", "value1"}};  // get-vanilla-query-order-key-case
  CHECK(CanonicalQueryString(request.query) == "Param1=value1&Param2=value2");
  CHECK(SuiteSignature(request) ==
        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST_CASE("sigv4: test suite POST cases") {
  SUBCASE("post-vanilla") {
    CHECK(SuiteSignature(SuiteRequest("POST")) ==
          "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
  }
  SUBCASE("post-vanilla-query") {
    RequestToSign request = SuiteRequest("POST");
    request.query = {{"Param1", "value1"}};
    CHECK(SuiteSignature(request) ==
          "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11");
  }
  SUBCASE("post-header-key-sort") {
    RequestToSign request = SuiteRequest("POST");
    request.headers.emplace_back("My-Header1", "value1");
    CHECK(SignedHeaderNames(request) == "host;my-header1;x-amz-date");
    CHECK(SuiteSignature(request) ==
          "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c");
  }
  SUBCASE("post-header-value-case") {
    RequestToSign request = SuiteRequest("POST");
    request.headers.emplace_back("My-Header1", "VALUE1");
    CHECK(SuiteSignature(request) ==
          "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d");
  }
  SUBCASE("post-x-www-form-urlencoded") {
    RequestToSign request = SuiteRequest("POST");
    request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    request.body = "Param1=value1";
    const std::string canonical = CanonicalRequest(request);
    CHECK(canonical ==
          "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\n"
          "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
          "content-type;host;x-amz-date\n"
          "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e");
    CHECK(StringToSign("20150830T123600Z", kSuiteScope, canonical) ==
          "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
          "42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281");
    CHECK(SuiteSignature(request) ==
          "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
  }
  SUBCASE("post-x-www-form-urlencoded-parameters") {
    RequestToSign request = SuiteRequest("POST");
    request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded; charset=utf8");
    request.body = "Param1=value1";
    CHECK(SuiteSignature(request) ==
          "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe");
  }
}

TEST_CASE("sigv4: 2011 test suite (Date header, service host)") {
  const CredentialScope scope{"20110909", "us-east-1", "host"};
  auto signature = [&](const RequestToSign& request) {
    return SignatureOf(AuthorizationHeader(request, kExampleKey, scope, "20110909T233600Z"));
  };
  RequestToSign request;
  request.method = "GET";
  request.headers = {{"Date", "Mon, 09 Sep 2011 23:36:00 GMT"}, {"Host", "host.foo.com"}};
  SUBCASE("get-vanilla") {
    CHECK(signature(request) == "b27ccfbfa7df52a200ff74193ca6e32d4b48b8856fab7ebf1c595d0670a7e470");
  }
  SUBCASE("get-vanilla-query-order-value: repeated names sort by value") {
    request.query = {{"foo", "b"}, {"foo", "a"}};
    CHECK(signature(request) == "feb926e49e382bec75c9d7dcb2a1b6dc8aa50ca43c25d2bc51143768c0875acc");
  }
  SUBCASE("post-x-www-form-urlencoded") {
    request.method = "POST";
    request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    request.body = "foo=bar";
    CHECK(SignedHeaderNames(request) == "content-type;date;host");
    CHECK(signature(request) == "5a15b22cf462f047318703b92e6f4f38884e4a7ab7b1d6426ca46a8bd1c26cbc");
  }
}

TEST_CASE("sigv4: encoding and header folding") {
  CHECK(UriEncode("a b+c/d~e", false) == "a%20b%2Bc%2Fd~e");
  CHECK(UriEncode("/a b/", true) == "/a%20b/");
  CHECK(UriEncode("\xE1\x88\xB4", false) == "%E1%88%B4");
  RequestToSign request;
  request.headers = {{"My-Header2", "  a   b   c  "}, {"my-header1", "x"}, {"MY-HEADER1", "y"}};
  const std::string canonical = CanonicalRequest(request);
  CHECK(canonical.find("my-header1:x,y\nmy-header2:a b c\n") != std::string::npos);
}

TEST_CASE("sigv4: SignRequest adds the date, the token and a signature over both") {
  RequestToSign request;
  request.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
  request.body = "Action=DescribeInstances&Version=2016-11-15";
  const Credentials temporary{"ASIAEXAMPLE", kSecret, "session-token-value"};
  // 2015-08-30T12:36:00Z
  const auto when = std::chrono::system_clock::from_time_t(1440938160);
  CHECK(FormatAmzDate(when) == "20150830T123600Z");
  SignRequest(request, "ec2.us-east-1.amazonaws.com", temporary, "us-east-1", "ec2", when);
  std::string authorization;
  std::string token;
  for (const auto& [name, value] : request.headers) {
    if (name == "Authorization") authorization = value;
    if (name == "X-Amz-Security-Token") token = value;
  }
  CHECK(token == "session-token-value");
  CHECK(authorization.rfind("AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20150830/us-east-1/ec2/"
                            "aws4_request, SignedHeaders=content-type;host;x-amz-date;"
                            "x-amz-security-token, Signature=",
                            0) == 0);
  CHECK(SignatureOf(authorization).size() == 64);
}

}  // namespace
}  // namespace tessera::aws
