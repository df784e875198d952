#pragma once
// Reading a file the user named (a config, a vocabulary, a corpus): it must be a regular file
// and no larger than the caller's bound, checked on the open descriptor before a byte is read.
// A FIFO, a device (/dev/zero) or a directory is refused instead of blocking or reading without
// end; O_NONBLOCK makes the open of a FIFO return at once.
#include <cstddef>
#include <string>
#include <string_view>

namespace zt {

// The whole file. `what` names it in the error ("--config file"). Throws InputError.
std::string read_input_file(const std::string& path, size_t max_bytes, std::string_view what);

// At most `max` characters of `text` for an error message: printable UTF-8 passes, control
// characters and malformed bytes become '?', and the full length is given when it was cut, so
// a hostile value can neither flood the terminal nor break the one line.
std::string excerpt(std::string_view text, size_t max = 40);

}  // namespace zt
