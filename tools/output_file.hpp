// Output files of the CLI (`run --out`, `sweep --out`): checked before any work, written
// through a temporary file and a rename so a reader never sees a partial file, and removed
// by SIGINT / SIGTERM while being written.
#pragma once

#include <stdexcept>
#include <string>

namespace ddlsim::tools {

/// Bad input outside a scenario file (a command-line value, an output path): exit code 2.
class CliError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Throws CliError unless `path` names a file in an existing folder (not a folder itself).
void check_output_path(const std::string& path);
/// Writes `text` to `path` atomically (temporary file + rename); throws CliError on failure.
void write_file_atomically(const std::string& path, const std::string& text);
/// Installs SIGINT and SIGTERM handlers that remove a temporary file being written, then die of the signal.
void remove_partial_output_on_interrupt();

}  // namespace ddlsim::tools
