#pragma once
// The checksum the NVMe tier records for every chunk it writes and verifies on every read: a file
// changed or truncated behind the run's back must stop it, never feed it wrong states.
//
// CRC32C (Castagnoli polynomial) over four lanes: 8-byte word i goes to lane i % 4, each lane a
// CRC32C of its words, and the result is the CRC32C of the four lane values and the length. One
// CRC32C chain is bound by the instruction's 3-cycle latency (about 8 GB/s); four independent
// chains run at its throughput, one word per cycle. It is not the standard CRC32C of the bytes.
#include <cstddef>
#include <cstdint>

namespace zt {

// With the SSE4.2 crc32 instruction when the CPU has it, else with tables; both give the same
// value.
uint32_t chunk_checksum(const void* data, size_t bytes);

namespace detail {
uint32_t chunk_checksum_tables(const void* data, size_t bytes);
bool crc32c_instruction();  // whether chunk_checksum uses the crc32 instruction
}  // namespace detail

}  // namespace zt
