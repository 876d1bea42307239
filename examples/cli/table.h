// Human output: a table with aligned columns, as `kubectl get` prints them.
//
// Thread safety: a plain value.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}

  // A row with fewer cells than the header is padded with empty cells.
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

  // Columns separated by three spaces, each as wide as its widest cell; no trailing blanks.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tessera::cli
