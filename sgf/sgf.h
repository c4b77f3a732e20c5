// SGF (Smart Game Format, FF[4]: https://www.red-bean.com/sgf/) as text: a parser of a
// collection into each game tree's main line, and the escaping a writer needs. Game-agnostic;
// sgf/go_sgf.h turns Go's properties into games and back.
//
//   absl::StatusOr<std::vector<sgf::GameTree>> trees = sgf::Parse(text);
//   const sgf::Property* size = (*trees)[0].nodes[0].Find("SZ");
//
// Grammar (FF[4]): Collection = GameTree+; GameTree = "(" Sequence GameTree* ")";
// Sequence = Node+; Node = ";" Property*; Property = PropIdent PropValue+;
// PropIdent = UcLetter+ (lower-case letters inside an identifier are dropped, as FF[4] asks of
// FF[3] files: "AddBlack" reads as "AB"); PropValue = "[" text "]" with "\" escaping the next
// character. White space between the parts is skipped.
// Main line: the sequence of a game tree, then the first of its sub-trees, and so on; the other
// variations are checked for syntax and left out.
// Errors (InvalidArgument), each naming where: "SGF line 3, column 7: ..." — no "(" to start a
// game tree, a missing ")" or "]", a property without a value, a value without a property,
// text outside a node, nesting deeper than kMaxDepth, more than kMaxBytes of input.
//
// Thread-safety: free functions over values; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zf::sgf {

inline constexpr size_t kMaxBytes = size_t{64} << 20;  // 64 MiB: any real game record is smaller
inline constexpr int kMaxDepth = 1000;                 // nested variations

struct Property {
  std::string id;                   // "B", "SZ", ...
  std::vector<std::string> values;  // unescaped ("\]" read as "]"); at least one
};

struct Node {
  std::vector<Property> properties;
  int line = 0;  // where its ";" is, 1-based, for error messages
  int column = 0;

  // The first property with this id, or nullptr.
  const Property* Find(absl::string_view id) const;
};

struct GameTree {
  std::vector<Node> nodes;  // the main line: nodes[0] is the root node
};

// Returns: every game tree of the collection, main lines only; InvalidArgument as above.
absl::StatusOr<std::vector<GameTree>> Parse(absl::string_view text);

// The contents of the SGF file at `path`.
// Returns: the bytes; NotFound ("PATH: no such file"); InvalidArgument for what is not a regular
// file (a directory, a FIFO, /dev/zero) or is larger than kMaxBytes, naming it; Internal for
// an I/O error.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// `value` escaped for a text or simple-text property value: "\" before every "]" and "\".
std::string Escape(absl::string_view value);

}  // namespace zf::sgf
