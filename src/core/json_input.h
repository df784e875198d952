#pragma once
// Parsing JSON that came from outside (a --config file, a vocab.json, a corpus line, a
// checkpoint's meta.json) with bounds: nesting depth and string length are capped while
// parsing, so a hostile file cannot exhaust the stack or memory later (printing a deeply nested
// value recursed until the stack overflowed), and errors quote only a short excerpt.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace zt {

struct JsonLimits {
  int max_depth = 32;             // nested arrays/objects
  size_t max_string = 64 * 1024;  // bytes of one string or key
};

// Throws InputError "<what> is not valid JSON: ..." or "... nests deeper than ..." naming `what`.
nlohmann::json parse_json_input(std::string_view text, std::string_view what,
                                const JsonLimits& limits = {});

// The members of a flat JSON object (every value a scalar, as vocab.json's token -> id), read
// in one pass without building a document: no tree of nodes and no sorted map for a 50k-entry
// vocabulary. Calls `member(key, value)` in file order, duplicates included; `value` is null, a
// boolean, a number or a string. Bounded like parse_json_input with max_depth 1. Throws
// InputError: "<what> is not valid JSON: ...", "<what> nests deeper than 1 levels" for an array
// or object value, "<what> holds a string of ..." and "<what> is not a JSON object (got ...)".
void parse_flat_json_object(
    std::string_view text, std::string_view what, size_t max_string,
    const std::function<void(std::string& key, const nlohmann::json& value)>& member);

// A short, printable rendering of a value for an error message.
std::string json_excerpt(const nlohmann::json& v, size_t max = 40);

// The name of a value's JSON type as a user would say it ("number", "string", "array", ...).
std::string_view json_type_name(const nlohmann::json& v);

}  // namespace zt
