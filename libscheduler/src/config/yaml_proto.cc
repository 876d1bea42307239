#include "config/yaml_proto.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <vector>

namespace tessera {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

class Mapper {
 public:
  explicit Mapper(std::string source) : source_(std::move(source)) {}

  Status Message(const YAML::Node& node, const std::string& path, google::protobuf::Message* m);

 private:
  Status Error(const YAML::Node& node, const std::string& path, const std::string& problem) {
    const YAML::Mark mark = node.Mark();
    std::ostringstream os;
    os << source_;
    if (!mark.is_null()) os << ":" << mark.line + 1 << ":" << mark.column + 1;
    os << ": " << (path.empty() ? "(top level)" : path) << ": " << problem;
    return InvalidArgumentError(os.str());
  }

  Status Field(const YAML::Node& value, const std::string& path, google::protobuf::Message* m,
               const FieldDescriptor* field);
  Status Scalar(const YAML::Node& value, const std::string& path, google::protobuf::Message* m,
                const FieldDescriptor* field, bool repeated);
  template <typename T>
  Status Integer(const YAML::Node& value, const std::string& path, T* out);

  std::string source_;
};

// Whether `text` is well-formed UTF-8: no stray continuation byte, no overlong form, no
// surrogate, nothing past U+10FFFF (the rules protobuf applies to string fields).
bool IsUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    uint32_t code = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
      code = lead & 0x1f;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      code = lead & 0x0f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      code = lead & 0x07;
    } else {
      return false;
    }
    if (text.size() - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) || code > 0x10ffff ||
        (code >= 0xd800 && code <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

template <typename T>
Status Mapper::Integer(const YAML::Node& value, const std::string& path, T* out) {
  const std::string& text = value.Scalar();
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  if (ec == std::errc::result_out_of_range) {
    return Error(value, path, "'" + text + "' is out of range");
  }
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Error(value, path, "expected an integer, got '" + text + "'");
  }
  return Status::Ok();
}

Status Mapper::Scalar(const YAML::Node& value, const std::string& path,
                      google::protobuf::Message* m, const FieldDescriptor* field, bool repeated) {
  if (!value.IsScalar()) return Error(value, path, "expected a single value");
  const Reflection* r = m->GetReflection();
  const std::string& text = value.Scalar();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v = 0;
      TESSERA_RETURN_IF_ERROR(Integer(value, path, &v));
      repeated ? r->AddInt32(m, field, v) : r->SetInt32(m, field, v);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v = 0;
      TESSERA_RETURN_IF_ERROR(Integer(value, path, &v));
      repeated ? r->AddInt64(m, field, v) : r->SetInt64(m, field, v);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v = 0;
      TESSERA_RETURN_IF_ERROR(Integer(value, path, &v));
      repeated ? r->AddUInt32(m, field, v) : r->SetUInt32(m, field, v);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v = 0;
      TESSERA_RETURN_IF_ERROR(Integer(value, path, &v));
      repeated ? r->AddUInt64(m, field, v) : r->SetUInt64(m, field, v);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      char* end = nullptr;
      errno = 0;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE ||
          !std::isfinite(v)) {
        return Error(value, path, "expected a number, got '" + text + "'");
      }
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
        repeated ? r->AddDouble(m, field, v) : r->SetDouble(m, field, v);
      } else {
        const float f = static_cast<float>(v);
        repeated ? r->AddFloat(m, field, f) : r->SetFloat(m, field, f);
      }
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v;
      if (text == "true") {
        v = true;
      } else if (text == "false") {
        v = false;
      } else {
        return Error(value, path, "expected true or false, got '" + text + "'");
      }
      repeated ? r->AddBool(m, field, v) : r->SetBool(m, field, v);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_STRING:
      // A proto3 string that is not UTF-8 would be written to the store and sent on the wire,
      // but no parser would read it back.
      if (field->type() == FieldDescriptor::TYPE_STRING && !IsUtf8(text)) {
        return Error(value, path, "is not valid UTF-8 text");
      }
      repeated ? r->AddString(m, field, text) : r->SetString(m, field, text);
      return Status::Ok();
    case FieldDescriptor::CPPTYPE_ENUM: {
      const EnumValueDescriptor* e = field->enum_type()->FindValueByName(text);
      if (!e) {
        std::string known;
        for (int i = 0; i < field->enum_type()->value_count(); ++i) {
          known += (i ? ", " : "") + field->enum_type()->value(i)->name();
        }
        return Error(value, path, "unknown value '" + text + "' (one of: " + known + ")");
      }
      repeated ? r->AddEnum(m, field, e) : r->SetEnum(m, field, e);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return Error(value, path, "unsupported field type");
}

Status Mapper::Field(const YAML::Node& value, const std::string& path, google::protobuf::Message* m,
                     const FieldDescriptor* field) {
  const Reflection* r = m->GetReflection();
  if (field->is_map()) {
    if (!value.IsMap()) return Error(value, path, "expected a mapping of keys to values");
    const Descriptor* entry_type = field->message_type();
    for (const auto& kv : value) {
      const std::string key = kv.first.Scalar();
      google::protobuf::Message* entry = r->AddMessage(m, field);
      TESSERA_RETURN_IF_ERROR(
          Scalar(kv.first, path, entry, entry_type->FindFieldByNumber(1), false));
      const FieldDescriptor* value_field = entry_type->FindFieldByNumber(2);
      const std::string value_path = path + "[" + key + "]";
      if (value_field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        TESSERA_RETURN_IF_ERROR(Message(
            kv.second, value_path, entry->GetReflection()->MutableMessage(entry, value_field)));
      } else {
        TESSERA_RETURN_IF_ERROR(Scalar(kv.second, value_path, entry, value_field, false));
      }
    }
    return Status::Ok();
  }
  if (field->is_repeated()) {
    if (!value.IsSequence()) return Error(value, path, "expected a list");
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        TESSERA_RETURN_IF_ERROR(Message(value[i], item_path, r->AddMessage(m, field)));
      } else {
        TESSERA_RETURN_IF_ERROR(Scalar(value[i], item_path, m, field, true));
      }
    }
    return Status::Ok();
  }
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    return Message(value, path, r->MutableMessage(m, field));
  }
  return Scalar(value, path, m, field, false);
}

Status Mapper::Message(const YAML::Node& node, const std::string& path,
                       google::protobuf::Message* m) {
  if (node.IsNull()) return Status::Ok();  // an empty section leaves defaults.
  if (!node.IsMap()) return Error(node, path, "expected a mapping of field names to values");
  const Descriptor* d = m->GetDescriptor();
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return Error(kv.first, path, "keys must be plain names");
    const std::string key = kv.first.Scalar();
    const std::string field_path = path.empty() ? key : path + "." + key;
    const FieldDescriptor* field = d->FindFieldByName(key);
    // The lowerCamelCase JSON name too, so that a file may follow the API's JSON.
    if (!field) field = d->FindFieldByCamelcaseName(key);
    if (!field) {
      std::string known;
      for (int i = 0; i < d->field_count(); ++i) known += (i ? ", " : "") + d->field(i)->name();
      return Error(kv.first, field_path, "unknown field (known fields: " + known + ")");
    }
    // A null value has no position of its own; point at its key.
    if (kv.second.IsNull()) return Error(kv.first, field_path, "has no value");
    TESSERA_RETURN_IF_ERROR(Field(kv.second, field_path, m, field));
  }
  return Status::Ok();
}

// The parser's complaint about `source`, at its line and column when it knows them.
Status NotValidYaml(const std::string& source, const YAML::Exception& e) {
  std::ostringstream os;
  os << source;
  if (!e.mark.is_null()) os << ":" << e.mark.line + 1 << ":" << e.mark.column + 1;
  os << ": not valid YAML: " << e.msg;
  return InvalidArgumentError(os.str());
}

}  // namespace

Status YamlStringToMessage(const std::string& yaml, const std::string& source,
                           google::protobuf::Message* message) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return NotValidYaml(source, e);
  }
  try {
    return Mapper(source).Message(root, "", message);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(source + ": " + e.what());
  }
}

Status YamlStringToMessages(const std::string& yaml, const std::string& source,
                            const std::function<google::protobuf::Message*()>& next) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(yaml);
  } catch (const YAML::Exception& e) {
    return NotValidYaml(source, e);
  }
  int number = 0;
  for (const YAML::Node& document : documents) {
    if (document.IsNull()) continue;
    ++number;
    google::protobuf::Message* message = next();
    message->Clear();
    Status mapped;
    try {
      mapped = Mapper(source).Message(document, "", message);
    } catch (const YAML::Exception& e) {
      mapped = InvalidArgumentError(source + ": " + e.what());
    }
    if (!mapped.ok()) return mapped.WithContext("document " + std::to_string(number));
  }
  return Status::Ok();
}

Status YamlFileToMessage(const std::string& path, google::protobuf::Message* message) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return YamlStringToMessage(buffer.str(), path, message);
}

}  // namespace tessera
