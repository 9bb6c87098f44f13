// CSV output shared by the reports (explore's results.csv, bench's CSV).
#pragma once
#include <string>

namespace attnsim {

/// `s` as one CSV field (RFC 4180): as it is, or in double quotes with inner quotes doubled when
/// it holds a comma, a quote or a newline.
std::string csv_field(const std::string& s);

}  // namespace attnsim
