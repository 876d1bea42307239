#include "plugins/remote/wire.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace tessera::plugin_wire {
namespace {

void PutU32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// A cursor over bytes that fails once it would read past the end.
struct Reader {
  const std::string& bytes;
  size_t at = 0;
  bool ok = true;

  uint32_t U32() {
    if (!ok || bytes.size() - at < 4) {
      ok = false;
      return 0;
    }
    const uint32_t v = GetU32(bytes.data() + at);
    at += 4;
    return v;
  }
  std::string String() {
    const uint32_t size = U32();
    if (!ok || bytes.size() - at < size) {
      ok = false;
      return {};
    }
    std::string s = bytes.substr(at, size);
    at += size;
    return s;
  }
};

}  // namespace

bool AppendFrame(const Frame& frame, std::string* out) {
  const size_t body = kFrameHeaderBytes + frame.payload.size() + frame.error.size();
  if (body > kMaxFrameBytes) return false;
  out->reserve(out->size() + 4 + body);
  PutU32(static_cast<uint32_t>(body), out);
  out->push_back(static_cast<char>(frame.kind));
  out->push_back(static_cast<char>(frame.function));
  out->push_back(0);
  out->push_back(0);
  PutU32(static_cast<uint32_t>(frame.status), out);
  PutU64(frame.id, out);
  PutU32(static_cast<uint32_t>(frame.payload.size()), out);
  PutU32(static_cast<uint32_t>(frame.error.size()), out);
  out->append(frame.payload);
  out->append(frame.error);
  return true;
}

FrameDecoder::Result FrameDecoder::Next(Frame* out) {
  if (!error_.empty()) return Result::kError;
  const size_t available = buffer_.size() - consumed_;
  if (available < 4) return Result::kNeedMore;
  const char* p = buffer_.data() + consumed_;
  const uint32_t body = GetU32(p);
  if (body > max_) {
    error_ =
        "frame of " + std::to_string(body) + " bytes exceeds the limit of " + std::to_string(max_);
    return Result::kError;
  }
  if (body < kFrameHeaderBytes) {
    error_ = "frame of " + std::to_string(body) + " bytes is shorter than its header";
    return Result::kError;
  }
  if (available - 4 < body) return Result::kNeedMore;
  const char* h = p + 4;
  const uint32_t payload = GetU32(h + 16);
  const uint32_t error = GetU32(h + 20);
  if (uint64_t{payload} + error + kFrameHeaderBytes != body) {
    error_ = "frame sizes disagree: " + std::to_string(payload) + " + " + std::to_string(error) +
             " + header != " + std::to_string(body);
    return Result::kError;
  }
  out->kind = static_cast<FrameKind>(static_cast<uint8_t>(h[0]));
  out->function = static_cast<Function>(static_cast<uint8_t>(h[1]));
  out->status = static_cast<int32_t>(GetU32(h + 4));
  out->id = GetU64(h + 8);
  out->payload.assign(h + kFrameHeaderBytes, payload);
  out->error.assign(h + kFrameHeaderBytes + payload, error);
  consumed_ += 4 + body;
  // Drop what was returned once it is most of the buffer, so the buffer does not grow forever.
  if (consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  } else if (consumed_ > buffer_.size() / 2) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return Result::kFrame;
}

bool WriteAll(int fd, const std::string& bytes, std::string* error) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("write: ") + std::strerror(errno);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool ReadFrame(int fd, FrameDecoder& decoder, Frame* out, std::string* error) {
  char chunk[64 * 1024];
  while (true) {
    switch (decoder.Next(out)) {
      case FrameDecoder::Result::kFrame:
        return true;
      case FrameDecoder::Result::kError:
        *error = decoder.error();
        return false;
      case FrameDecoder::Result::kNeedMore:
        break;
    }
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("read: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      *error = "end of stream";
      return false;
    }
    decoder.Append(chunk, static_cast<size_t>(n));
  }
}

std::string EncodeDescriptorInfo(const DescriptorInfo& info) {
  std::string out;
  PutU32(info.abi_major, &out);
  PutU32(info.abi_minor, &out);
  PutU32(info.struct_size, &out);
  PutU32(info.kinds, &out);
  PutU32(info.functions, &out);
  PutU32(static_cast<uint32_t>(info.name.size()), &out);
  out.append(info.name);
  PutU32(static_cast<uint32_t>(info.version.size()), &out);
  out.append(info.version);
  return out;
}

bool DecodeDescriptorInfo(const std::string& bytes, DescriptorInfo* out) {
  Reader r{bytes};
  out->abi_major = r.U32();
  out->abi_minor = r.U32();
  out->struct_size = r.U32();
  out->kinds = r.U32();
  out->functions = r.U32();
  out->name = r.String();
  out->version = r.String();
  return r.ok && r.at == bytes.size();
}

std::string EncodeInt64(int64_t value) {
  std::string out;
  PutU64(static_cast<uint64_t>(value), &out);
  return out;
}

bool DecodeInt64(const std::string& bytes, int64_t* out) {
  if (bytes.size() != 8) return false;
  *out = static_cast<int64_t>(GetU64(bytes.data()));
  return true;
}

}  // namespace tessera::plugin_wire
