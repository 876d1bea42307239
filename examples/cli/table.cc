#include "table.h"

#include <algorithm>

namespace tessera::cli {

void Table::Print(std::ostream& out) const {
  const size_t columns = rows_.front().size();
  std::vector<size_t> width(columns, 0);
  for (const auto& row : rows_) {
    for (size_t i = 0; i < std::min(columns, row.size()); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < columns; ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      line += cell;
      if (i + 1 < columns) line += std::string(width[i] - cell.size() + 3, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
}

}  // namespace tessera::cli
