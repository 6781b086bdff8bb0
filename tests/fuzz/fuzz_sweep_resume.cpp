// libFuzzer target: arbitrary bytes as the files `ddlsim sweep --resume` reads back — the record
// (RESULTS.sweep.json), the journal (RESULTS.rows.jsonl) and the results file itself (CSV, or a JSON array when
// the first byte is odd). The input is cut at the lines "@@@@" into those three files, written into a
// per-process directory beside a fixed two-point scenario, and the sweep is resumed through run_sweep, the very
// function the CLI calls. Whatever the files hold, the sweep must end in 0, 2 (the resume file refused, one line
// naming it) or 3 — never 1 (an internal error), a crash or a hang (docs/ROBUSTNESS.md).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/sweep.hpp"

namespace {

namespace fs = std::filesystem;

void write(const fs::path& file, std::string_view text) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

// A cheap scenario (analytic model, two or four workers): a resumed point that has to be recomputed costs
// microseconds, so the fuzzer spends its time in the resume code.
constexpr std::string_view kScenario = R"({"workers": 2, "model": "resnet50", "batch_size": 32, "iterations": 1,
  "device": "V100", "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "10us", "model": "analytic"},
  "architecture": {"kind": "allreduce", "algorithm": "ring"}})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const fs::path dir = [] {
        fs::path d = fs::temp_directory_path() / ("ddlsim_fuzz_resume_" + std::to_string(::getpid()));
        fs::create_directories(d);
        write(d / "s.json", kScenario);
        return d;
    }();
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const bool json_format = !input.empty() && (static_cast<unsigned char>(input.front()) & 1U) != 0;
    std::vector<std::string_view> parts;
    std::size_t from = input.empty() ? 0 : 1;
    for (;;) {
        const auto at = input.find("\n@@@@\n", from);
        if (at == std::string_view::npos || parts.size() == 2) {
            parts.push_back(input.substr(std::min(from, input.size())));
            break;
        }
        parts.push_back(input.substr(from, at - from));
        from = at + 6;
    }
    parts.resize(3);
    const fs::path out = dir / (json_format ? "r.json" : "r.csv");
    std::error_code ec;
    for (const char* name :
         {"r.csv", "r.json", "r.csv.sweep.json", "r.json.sweep.json", "r.csv.rows.jsonl", "r.json.rows.jsonl"})
        fs::remove(dir / name, ec);
    write(out.string() + ".sweep.json", parts[0]);
    write(out.string() + ".rows.jsonl", parts[1]);
    write(out, parts[2]);

    ddlsim::tools::SweepOptions opts;
    opts.scenario_file = (dir / "s.json").string();
    opts.vary = {"workers=2,4"};
    opts.out = out.string();
    opts.jobs = 1;
    opts.resume = true;
    opts.progress = false;
    opts.format = json_format ? ddlsim::tools::SweepFormat::json : ddlsim::tools::SweepFormat::csv;
    std::ostringstream err;
    const int status = ddlsim::tools::run_sweep(opts, err);
    if (status != 0 && status != 2 && status != ddlsim::tools::kSweepSomePointsFailed) {
        std::cerr << "run_sweep returned " << status << ": " << err.str() << '\n';
        std::abort();
    }
    if (status == 2 && err.str().find('\n') != err.str().rfind('\n')) {  // a refusal is one line
        std::cerr << "a refusal of more than one line: " << err.str() << '\n';
        std::abort();
    }
    return 0;
}
