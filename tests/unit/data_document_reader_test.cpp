// prepare-data's input formats: blank-line-separated text blocks and JSON lines.
#include <gtest/gtest.h>

#include <fstream>

#include "src/core/error.h"
#include "src/data/document_reader.h"
#include "tests/support/data_testing.h"

namespace zt::data {
namespace {

std::vector<std::vector<std::string>> read_all(const std::string& path, InputFormat f,
                                               std::vector<std::string> keys = {"text"}) {
  DocumentReader r(path, f, std::move(keys));
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> fields;
  while (r.next(fields)) out.push_back(fields);
  EXPECT_EQ(r.bytes_read(), r.bytes_total());
  return out;
}

TEST(DocumentReader, TextBlocks) {
  testing::TempDir dir;
  std::ofstream(dir / "a.txt") << "\n\nfirst line\nsecond  line\n\n \n\r\nthird\r\nx\n\nlast";
  const auto docs = read_all(dir / "a.txt", InputFormat::kText);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0][0], "first line\nsecond  line");
  EXPECT_EQ(docs[1][0], "third\nx");
  EXPECT_EQ(docs[2][0], "last");
}

TEST(DocumentReader, JsonLines) {
  testing::TempDir dir;
  std::ofstream(dir / "a.jsonl") << R"({"text": "héllo\nworld", "title": "t1"})"
                                    "\n\n"
                                 << R"({"text": "", "title": "t2"})"
                                    "\n";
  EXPECT_EQ(format_from_extension(dir / "a.jsonl"), InputFormat::kJsonLines);
  EXPECT_EQ(format_from_extension(dir / "a.txt"), InputFormat::kText);
  const auto docs = read_all(dir / "a.jsonl", InputFormat::kJsonLines, {"text", "title"});
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], (std::vector<std::string>{"héllo\nworld", "t1"}));
  EXPECT_EQ(docs[1], (std::vector<std::string>{"", "t2"}));  // empty text is kept (Megatron)
}

TEST(DocumentReader, JsonErrorsNameTheLine) {
  testing::TempDir dir;
  std::ofstream(dir / "b.jsonl") << R"({"text": "ok"})"
                                    "\n"
                                 << R"({"body": "x"})"
                                    "\n";
  try {
    read_all(dir / "b.jsonl", InputFormat::kJsonLines);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.jsonl:2: no string field 'text'"), std::string::npos)
        << e.what();
  }
  std::ofstream(dir / "c.jsonl") << "not json\n";
  EXPECT_THROW(read_all(dir / "c.jsonl", InputFormat::kJsonLines), InputError);
  EXPECT_THROW(read_all(dir / "none.txt", InputFormat::kText), InputError);
}

// The in-memory reader (the fuzzer's entry) is the same parser: same documents, errors named by
// the name given.
TEST(DocumentReader, FromMemory) {
  const std::string text = "a\n\n b \n";
  DocumentReader r(std::string_view(text), "mem.txt", InputFormat::kText, {"text"});
  std::vector<std::string> fields;
  ASSERT_TRUE(r.next(fields));
  EXPECT_EQ(fields[0], "a");
  ASSERT_TRUE(r.next(fields));
  EXPECT_EQ(fields[0], " b ");
  EXPECT_FALSE(r.next(fields));
  EXPECT_EQ(r.bytes_read(), text.size());
  const std::string json = "{\"text\": 1}\n";
  DocumentReader j(std::string_view(json), "mem.jsonl", InputFormat::kJsonLines, {"text"});
  try {
    j.next(fields);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mem.jsonl:1: no string field 'text'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace zt::data
