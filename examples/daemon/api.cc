#include "api.h"

#include <future>

#include "router.h"

namespace tesserad {

namespace http = boost::beast::http;

Api::Api(tessera::Scheduler* scheduler, tessera::v1::DaemonConfig config,
         const std::atomic<bool>* stopping, const AlertMonitor* alerts)
    : scheduler_(scheduler),
      config_(std::move(config)),
      auth_(config_),
      submit_limiter_(config_.limits().submits_per_second(), config_.limits().submit_burst()),
      stopping_(stopping),
      alerts_(alerts),
      long_polls_(config_.server().max_long_polls_per_token()) {}

ApiResponse Api::Handle(const HttpRequest& request) {
  if (AnswersAsync(request)) {
    std::promise<ApiResponse> answer;
    std::future<ApiResponse> answered = answer.get_future();
    HandleAsync(std::make_shared<const HttpRequest>(request),
                [&answer](std::function<ApiResponse()> encode) { answer.set_value(encode()); });
    return answered.get();
  }
  std::string_view target = Sv(request.target());
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const Query query = ParseQuery(question == std::string_view::npos ? std::string_view()
                                                                    : target.substr(question + 1));

  if (path == "/healthz" || path == "/readyz") {
    if (request.method() != http::verb::get) return MethodNotAllowed(request, "GET");
    if (path == "/readyz" && stopping_->load()) {
      return ErrorFor(request, tessera::UnavailableError("shutting down"));
    }
    if (path == "/readyz") {
      // Not ready while a backend is down: its nodes take no work until it recovers.
      auto backends = scheduler_->ListBackends();
      if (!backends.ok()) return ErrorFor(request, backends.status());
      for (const auto& b : *backends) {
        if (!b.healthy()) {
          return ErrorFor(request,
                          tessera::UnavailableError("backend '" + b.name() +
                                                    "' is unhealthy: " + b.unhealthy_reason()));
        }
      }
    }
    return MakeResponse(request, 200, "text/plain", "ok\n");
  }
  auto principal = Authenticate(request);
  if (auto* refused = std::get_if<HttpResponse>(&principal)) return std::move(*refused);
  Router router(*scheduler_, config_, *stopping_, alerts_, submit_limiter_, request,
                std::move(std::get<Principal>(principal)));
  return router.Route(path, query);
}

bool Api::AnswersAsync(const HttpRequest& request) {
  const std::string_view target = Sv(request.target());
  const std::string_view path = target.substr(0, target.find('?'));
  return (request.method() == http::verb::post && path == "/v1/jobs") ||
         (request.method() == http::verb::get && path == "/v1/events");
}

Canceller Api::HandleAsync(std::shared_ptr<const HttpRequest> request, Responder respond) {
  auto principal = Authenticate(*request);
  if (auto* refused = std::get_if<HttpResponse>(&principal)) {
    respond([response = std::move(*refused)] { return ApiResponse(response); });
    return nullptr;
  }
  Router router(*scheduler_, config_, *stopping_, alerts_, submit_limiter_, *request,
                std::move(std::get<Principal>(principal)));
  const std::string_view target = Sv(request->target());
  const size_t question = target.find('?');
  if (request->method() == http::verb::get) {
    const Query query = ParseQuery(
        question == std::string_view::npos ? std::string_view() : target.substr(question + 1));
    return router.WatchEventsAsync(request, query, long_polls_, std::move(respond));
  }
  router.SubmitJobAsync(request, std::move(respond));
  return nullptr;
}

std::variant<HttpResponse, Principal> Api::Authenticate(const HttpRequest& request) const {
  auto principal = auth_.Authenticate(Sv(request[http::field::authorization]));
  if (principal) return std::move(*principal);
  HttpResponse response = ErrorResponse(401, "UNAUTHENTICATED",
                                        request[http::field::authorization].empty()
                                            ? "missing Authorization: Bearer <token> header"
                                            : "unknown or malformed bearer token");
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  response.set(http::field::www_authenticate, "Bearer");
  return response;
}

}  // namespace tesserad
