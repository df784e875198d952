#include "src/core/json_input.h"

#include "src/core/error.h"
#include "src/core/input_file.h"

namespace zt {
namespace {

// Why the callback stopped the parser; thrown through nlohmann's parser and caught below.
struct LimitExceeded {
  std::string why;
};

}  // namespace

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
