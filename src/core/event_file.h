#pragma once
// TensorBoard event files without TensorFlow or protobuf: TFRecord framing (little-endian u64
// length, masked CRC-32C of the length, the data, masked CRC-32C of the data) around serialized
// tensorflow.Event messages. Only the fields a scalar needs are written, encoded by hand:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// The first record of a file is the version event ("brain.Event:2"), as TensorBoard expects.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace zt {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses it.
uint32_t crc32c(const void* data, size_t n);
// TFRecord's masking of a stored CRC: rotate right by 15 and add a constant.
uint32_t masked_crc32c(const void* data, size_t n);
// One framed record around `data`.
std::string tfrecord(std::string_view data);

// The serialized Event of one scalar (`wall_time` seconds since the epoch).
std::string scalar_event(double wall_time, int64_t step, std::string_view tag, float value);
// The serialized version Event that starts every file.
std::string version_event(double wall_time);

// Appends scalars to DIR/events.out.tfevents.<seconds>.<host> (DIR created). Flushed on flush()
// and on destruction, so TensorBoard sees a step once the writer is flushed.
class EventFileWriter {
 public:
  explicit EventFileWriter(const std::string& dir);  // InputError when DIR cannot be written
  void add_scalar(std::string_view tag, double value, int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Close> file_;
  void append(const std::string& event);
};

}  // namespace zt
