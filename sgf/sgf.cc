#include "sgf/sgf.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace zf::sgf {
namespace {

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<GameTree>> Collection() {
    std::vector<GameTree> trees;
    SkipSpace();
    if (AtEnd()) return Error("no game tree: an SGF file starts with \"(;\"");
    while (!AtEnd()) {
      if (Peek() != '(')
        return Error(absl::StrCat("expected \"(\" to start a game tree, found ", Shown()));
      GameTree tree;
      absl::Status status = Tree(&tree.nodes, /*main_line=*/true, /*depth=*/1);
      if (!status.ok()) return status;
      trees.push_back(std::move(tree));
      SkipSpace();
    }
    return trees;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }
  void SkipSpace() {
    while (!AtEnd() && absl::ascii_isspace(static_cast<unsigned char>(Peek()))) Advance();
  }
  std::string Shown() const {
    if (AtEnd()) return "the end of the file";
    const unsigned char c = static_cast<unsigned char>(Peek());
    if (absl::ascii_isprint(c)) return absl::StrCat("\"", std::string(1, Peek()), "\"");
    return absl::StrCat("byte ", static_cast<int>(c));
  }
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("SGF line ", line_, ", column ", column_, ": ", message));
  }

  // At "(": the tree's nodes are appended to *nodes when main_line (else only checked).
  absl::Status Tree(std::vector<Node>* nodes, bool main_line, int depth) {
    if (depth > kMaxDepth) {
      return Error(absl::StrCat("variations nested deeper than ", kMaxDepth));
    }
    Advance();  // "("
    SkipSpace();
    if (AtEnd() || Peek() != ';') {
      return Error(absl::StrCat("expected \";\" to start a node, found ", Shown()));
    }
    while (!AtEnd() && Peek() == ';') {
      Node node;
      absl::Status status = ParseNode(&node);
      if (!status.ok()) return status;
      if (main_line) nodes->push_back(std::move(node));
      SkipSpace();
    }
    bool first = true;
    while (!AtEnd() && Peek() == '(') {
      absl::Status status = Tree(nodes, main_line && first, depth + 1);
      if (!status.ok()) return status;
      first = false;
      SkipSpace();
    }
    if (AtEnd()) return Error("missing \")\" at the end of a game tree");
    if (Peek() != ')') {
      return Error(absl::StrCat("expected a node, a variation or \")\", found ", Shown()));
    }
    Advance();
    return absl::OkStatus();
  }

  // At ";".
  absl::Status ParseNode(Node* node) {
    node->line = line_;
    node->column = column_;
    Advance();
    SkipSpace();
    while (!AtEnd() && absl::ascii_isalpha(static_cast<unsigned char>(Peek()))) {
      Property property;
      const int line = line_, column = column_;
      while (!AtEnd() && absl::ascii_isalpha(static_cast<unsigned char>(Peek()))) {
        if (absl::ascii_isupper(static_cast<unsigned char>(Peek()))) property.id.push_back(Peek());
        Advance();
      }
      if (property.id.empty()) {
        line_ = line;
        column_ = column;
        return Error("a property name needs an upper-case letter");
      }
      SkipSpace();
      while (!AtEnd() && Peek() == '[') {
        std::string value;
        Advance();
        while (!AtEnd() && Peek() != ']') {
          if (Peek() == '\\') {
            Advance();
            if (AtEnd()) break;
          }
          value.push_back(Peek());
          Advance();
        }
        if (AtEnd()) {
          return Error(absl::StrCat("missing \"]\" at the end of the value of ", property.id));
        }
        Advance();  // "]"
        property.values.push_back(std::move(value));
        SkipSpace();
      }
      if (property.values.empty()) {
        return Error(absl::StrCat("property ", property.id, " has no value (expected \"[\", found ",
                                  Shown(), ")"));
      }
      node->properties.push_back(std::move(property));
    }
    if (!AtEnd() && Peek() == '[') return Error("a value without a property name");
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

const Property* Node::Find(absl::string_view id) const {
  for (const Property& p : properties) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

absl::StatusOr<std::vector<GameTree>> Parse(absl::string_view text) {
  if (text.size() > kMaxBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("SGF: ", text.size(), " bytes is more than the ", kMaxBytes, " allowed"));
  }
  return Parser(text).Collection();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (!std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) return absl::InternalError(absl::StrCat(path, ": ", error.message()));
  if (size > kMaxBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", size, " bytes is more than the ", kMaxBytes, " allowed"));
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in) return absl::InternalError(absl::StrCat(path, ": cannot be read"));
  return text;
}

std::string Escape(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace zf::sgf
