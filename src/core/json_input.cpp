#include "src/core/json_input.h"

#include "src/core/error.h"
#include "src/core/input_file.h"

namespace zt {
namespace {

// Why the callback stopped the parser; thrown through nlohmann's parser and caught below.
struct LimitExceeded {
  std::string why;
};

// nlohmann's SAX interface for parse_flat_json_object: depth 0 is the top-level object, every
// value is delivered at depth 1, and anything that would open depth 2 stops the parser.
class FlatObjectSax {
 public:
  using Json = nlohmann::json;
  using Member = std::function<void(std::string&, const Json&)>;
  FlatObjectSax(std::string_view what, size_t max_string, const Member& member)
      : what_(what), max_string_(max_string), member_(member) {}

  bool null() { return value(Json(nullptr)); }
  bool boolean(bool v) { return value(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return value(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return value(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return value(Json(v)); }
  bool string(std::string& v) {
    bounded(v);
    return value(Json(std::move(v)));
  }
  bool binary(Json::binary_t&) { return value(Json::binary({})); }  // not produced by JSON text
  bool start_object(size_t) { return open(Json::value_t::object); }
  bool start_array(size_t) { return open(Json::value_t::array); }
  bool end_object() { return true; }
  bool end_array() { return true; }  // never reached: arrays are refused when they open
  bool key(std::string& k) {
    bounded(k);
    key_ = std::move(k);
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    // nlohmann quotes the token it stopped at, which can be the rest of a long string.
    throw InputError(fmt::format("{} is not valid JSON: {}", what_, excerpt(e.what(), 160)));
  }

 private:
  bool open(Json::value_t type) {
    if (in_object_) throw InputError(fmt::format("{} nests deeper than 1 levels", what_));
    if (type != Json::value_t::object) not_an_object(Json(type));
    in_object_ = true;
    return true;
  }
  bool value(const Json& v) {
    if (!in_object_) not_an_object(v);
    member_(key_, v);
    return true;
  }
  [[noreturn]] void not_an_object(const Json& v) const {
    throw InputError(fmt::format("{} is not a JSON object (got {})", what_, json_type_name(v)));
  }
  void bounded(const std::string& s) const {
    if (s.size() > max_string_)
      throw InputError(fmt::format("{} holds a string of {} bytes (at most {}): '{}'", what_,
                                   s.size(), max_string_, excerpt(s)));
  }

  std::string_view what_;
  size_t max_string_;
  const Member& member_;
  bool in_object_ = false;
  std::string key_;
};

}  // namespace

void parse_flat_json_object(
    std::string_view text, std::string_view what, size_t max_string,
    const std::function<void(std::string& key, const nlohmann::json& value)>& member) {
  FlatObjectSax sax(what, max_string, member);
  nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
}

nlohmann::json parse_json_input(std::string_view text, std::string_view what,
                                const JsonLimits& limits) {
  using Event = nlohmann::json::parse_event_t;
  auto bound = [&](int depth, Event event, nlohmann::json& parsed) {
    if ((event == Event::object_start || event == Event::array_start) && depth >= limits.max_depth)
      throw LimitExceeded{fmt::format("nests deeper than {} levels", limits.max_depth)};
    if ((event == Event::key || event == Event::value) && parsed.is_string() &&
        parsed.get_ref<const std::string&>().size() > limits.max_string)
      throw LimitExceeded{fmt::format("holds a string of {} bytes (at most {}): '{}'",
                                      parsed.get_ref<const std::string&>().size(),
                                      limits.max_string,
                                      excerpt(parsed.get_ref<const std::string&>()))};
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), bound);
  } catch (const LimitExceeded& e) {
    throw InputError(fmt::format("{} {}", what, e.why));
  } catch (const nlohmann::json::exception& e) {
    // nlohmann quotes the token it stopped at, which can be the rest of a long string.
    throw InputError(fmt::format("{} is not valid JSON: {}", what, excerpt(e.what(), 160)));
  }
}

std::string json_excerpt(const nlohmann::json& v, size_t max) {
  // Values reaching here were parsed under JsonLimits, so dump's recursion is bounded.
  return excerpt(v.is_string() ? v.get_ref<const std::string&>() : v.dump(), max);
}

std::string_view json_type_name(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::binary:
      return "binary";
    case nlohmann::json::value_t::number_float:
      return "number";
    default:
      return "integer";
  }
}

}  // namespace zt
