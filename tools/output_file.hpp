// Output files of the CLI (`run --out`, `run --trace`, `sweep --out`, `validate` / `calibrate` outputs):
// checked before any work, written through a temporary file beside the target and a rename, so a reader
// never sees a partial file and nothing but the named file is ever replaced.
//
// What a path may name: a new file in an existing folder, or an existing regular file. A symbolic link is
// followed on purpose (the regular file it ends in is written, the link stays a link). A directory, FIFO,
// socket or device is refused (CliError, exit 2): renaming a regular file over them would destroy them.
// The temporary file (".NAME.ddlsim-XXXXXX" in the target's folder) is removed on every exit path: on a
// failed write, and by SIGINT / SIGTERM / SIGHUP / SIGQUIT / SIGPIPE arriving while it exists (the handler
// unlinks it, then the process dies of the signal as usual).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// Still namespace ddlsim::sim, as when it lived in sim/ (its users and tests name it so).
namespace ddlsim::sim {

/// Bad input outside a scenario file (a command-line value, an output path): exit code 2.
class CliError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The file `path` writes to: `path` itself or, for a symbolic link, the file its chain of links ends
/// in (which need not exist yet). Throws CliError naming `path` and what was expected when that is a
/// directory, FIFO, socket or device, when its folder does not exist, or when the links loop.
[[nodiscard]] std::string resolve_output_path(const std::string& path);
/// Throws CliError unless `path` may be written (see resolve_output_path).
void check_output_path(const std::string& path);
/// Whether two paths name one file: by device and inode once symbolic links are resolved when both exist (so
/// "r.json", "./r.json", "/abs/r.json", "d/../r.json", a symbolic link and a hard link all match), otherwise by
/// the absolute, normalised path with links resolved as far as the path exists.
[[nodiscard]] bool same_file(const std::string& a, const std::string& b);
/// The files one command reads and writes, checked together before anything is written: every output may be
/// written (check_output_path) and no output is an input or another output (same_file). Empty paths and "-"
/// (standard input or output) are ignored.
class FileRoles {
public:
    /// A file the command reads (the scenario, a profile, a topology file, a resume record).
    void input(const std::string& path, const std::string& what);
    /// A file the command writes; checked at once with check_output_path.
    void output(const std::string& path, const std::string& what);
    /// Throws CliError naming the first output that is an input or an earlier output.
    void check() const;

private:
    struct Output {
        std::string path, what, target;  // target: resolve_output_path(path)
    };
    std::vector<std::pair<std::string, std::string>> inputs_;
    std::vector<Output> outputs_;
};
/// Writes `text` to the resolved `path` atomically (temporary file beside it + rename); the file keeps
/// an existing file's permissions. Throws CliError on failure, leaving no temporary file behind.
void write_file_atomically(const std::string& path, const std::string& text);
/// Installs the handlers that remove a temporary file being written, then die of the signal.
void remove_partial_output_on_interrupt();

}  // namespace ddlsim::sim
