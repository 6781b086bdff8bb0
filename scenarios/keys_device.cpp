// The key table of a device (models/device.hpp DeviceSpec) and its reader: a built-in profile by name with
// overrides, explicit peaks, or a measured throughput, optionally under a calibration profile's "device".
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <vector>

#include "scenarios/key_tables.hpp"
#include "scenarios/loader_detail.hpp"
#include "scenarios/schema_tables.hpp"

namespace ddlsim::scenario {

using keys::key;
using keys::KeyTable;

namespace {

using models::DeviceSpec;

models::DeviceProfile profile_or_throw(const json& j, const std::string& path) {
    const std::string name = read_string(j, path);
    auto p = models::builtin_device(name);
    if (!p)
        throw ScenarioError(path, fmt::format("expected a built-in device ({}), got \"{}\"{}",
                                              detail::list(device_names()), name, did_you_mean(name, device_names())));
    return *p;
}

// Whether the device is a built-in profile (it has a "name"; otherwise it is "custom", or "calibrated" once
// read under a calibration profile).
bool builtin(const DeviceSpec& d) {
    return d.name != "custom" && d.name != "calibrated";
}

// The device's precision and the fractions that go with it (models/device.hpp). A built-in profile brings its
// measured fractions; a custom device (no "name") keeps the V100 peaks and memory but, as before, the scalar
// efficiency and its bandwidth as given.
void set_precision(DeviceSpec& d, std::optional<models::Precision> given, const std::string& ppath) {
    const bool named = builtin(d);
    const models::DeviceProfile p = *models::builtin_device(named ? d.name : "V100");
    const models::Precision precision = given.value_or(named ? p.default_precision : models::Precision::fp32);
    if (p.peak(precision).per_s() <= 0.0) {
        // What this part offers and the parts that offer the precision asked for, from the device table.
        std::vector<std::string> offered, parts;
        for (const auto& e : sim::enum_table<models::Precision>())
            if (p.peak(e.value).per_s() > 0.0) offered.emplace_back(e.name);
        for (const std::string& n : device_names())
            if (models::builtin_device(n)->peak(precision).per_s() > 0.0) parts.push_back(n);
        throw ScenarioError(
            ppath, fmt::format("{} has no {} math (it is on {}); expected one of {}", p.name,
                               models::precision_name(precision), fmt::join(parts, ", "), detail::list(offered)));
    }
    d.precision = precision;
    d.precision_source = given ? models::Source::scenario : models::Source::builtin_default;
    d.peak = p.peak(precision);
    d.vector_peak = p.fp32;
    d.memory_bandwidth = p.memory_bandwidth;
    if (named) {
        d.measured = p.efficiency(precision);
        d.fp32_measured = p.efficiency(models::Precision::fp32);
        d.sms = p.sms;
        // PyTorch's default on Ampere and later: TF32 convolutions, FP32 matmuls (models/device.cpp).
        d.tf32_convolutions_only = !given && precision == models::Precision::tf32;
        d.memory_capacity = p.memory_capacity.value();
        // Transformer Engine's FP8 runs the Linear layers' GEMMs in FP8 and attention in BF16 (models/device.cpp).
        if (precision == models::Precision::fp8)
            d.bf16_speed = p.peak(models::Precision::bf16).per_s() * p.efficiency(models::Precision::bf16).matmul /
                           (p.peak(precision).per_s() * d.measured->matmul);
    }
}

// A calibration profile's "device" member (written by `ddlsim calibrate`), merged under the
// keys the scenario's device object gives itself.
json merge_profile(const json& j, const std::string& path, const std::string& base_dir, std::string& file) {
    if (!j.is_object() || !j.contains("profile")) return j;
    const json profile = detail::read_profile_member(j.at("profile"), path + ".profile", base_dir, "device", file);
    if (profile.contains("profile"))
        throw ScenarioError(path + ".profile", fmt::format("{}: $.device.profile: a calibration profile's device "
                                                           "cannot name another profile; expected its measured keys",
                                                           file));
    json merged = profile;
    for (const auto& [k, v] : j.items())
        if (k != "profile") merged[k] = v;
    return merged;
}

}  // namespace

const std::vector<std::string>& device_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& d : models::builtin_devices()) out.push_back(d.name);
        return out;
    }();
    return names;
}

const KeyTable<DeviceSpec>& device_keys() {
    using D = DeviceSpec;
    static const KeyTable<D> t{
        "device",
        "a device: a profile with overrides, explicit peaks, or a measured throughput",
        {
            keys::custom<D>(
                "name", enum_schema(device_names(), "built-in profile the other keys override (default V100)"),
                [](D& d, const json& j, const std::string& path) { d.name = profile_or_throw(j, path).name; },
                [](const D& d) { return json(d.name); })
                .when_absent([](D& d) { d.name = "custom"; })
                .echo_when(builtin),
            // Read in every case: the precision fixes the peaks and fractions the keys below override.
            keys::custom<D>(
                "precision",
                enum_schema(sim::enum_names<models::Precision>(),
                            "arithmetic: fp32, tf32, fp16/bf16 (AMP), fp8 (Transformer Engine's: the GEMMs in FP8, "
                            "attention in BF16; on the parts with an FP8 rate: `ddlsim models`); "
                            "default: tf32 convolutions with fp32 matmuls on NVIDIA parts from A100 on (PyTorch's "
                            "default), fp32 on P100/V100 and AMD parts (ROCm's TF32 is opt-in)"),
                [](D& d, const json& j, const std::string& path) {
                    set_precision(d, read_enum<models::Precision>(j, path), path);
                },
                [](const D& d) { return json(std::string(models::precision_name(d.precision))); })
                .when_absent([](D& d) { set_precision(d, std::nullopt, ""); })
                // A100-class defaults run convolutions in TF32 and matmuls in FP32 (PyTorch's default), which no
                // precision value spells: the key is left out then, so the default applies again.
                .echo_when([](const D& d) { return !d.tf32_convolutions_only; }),
            key("peak_flops", &D::peak, "peak compute rate (overrides the profile)")
                .and_then([](D& d, const std::string&) {
                    if (!builtin(d)) d.vector_peak = d.peak;
                }),
            key("efficiency", &D::efficiency,
                "sustained fraction of peak for convolutions and matmuls; replaces the built-in profile's measured "
                "fractions (default: measured per generation and precision; 0.5 for custom devices)",
                {0, 1, true})
                .and_then([](D& d, const std::string&) { d.efficiency_source = models::Source::scenario; })
                // A built-in profile's measured per-operation fractions apply unless an efficiency overrides them;
                // the scalar is written only when it is what the run used.
                .echo_when([](const D& d) { return !d.uses_measured(); }),
            key("memory_bandwidth", &D::memory_bandwidth, "device memory bandwidth (update time)"),
            keys::custom<D>(
                "memory",
                bytes_schema("device memory for the memory-per-GPU check (default: the profile's datasheet HBM; "
                             "unknown for custom devices)"),
                [](D& d, const json& j, const std::string& path) {
                    d.memory_capacity = read_bytes(j, path).value();
                    if (!(*d.memory_capacity > 0.0)) throw ScenarioError(path, "expected a positive size");
                },
                [](const D& d) {
                    return d.memory_capacity ? json(sim::format_bytes(sim::Bytes{*d.memory_capacity})) : json(nullptr);
                }),
            key("samples_per_s", &D::samples_per_s,
                "measured single-device samples/s of this model at this batch size; fixes the compute scale",
                {0, 1e12, true}),
            key("samples_per_s_batch", &D::samples_per_s_batch,
                "the per-device batch samples_per_s was measured at (default: the scenario's batch_size); the compute "
                "model takes the measurement to the scenario's batch with its own batch dependence",
                {1, 10'000'000})
                .when([](const D& d) { return d.samples_per_s.has_value(); }, "applies with samples_per_s only"),
            key("software", &D::software, sim::enum_descriptions<models::Software>()).with_default("eager"),
            key("overlap_slowdown", &D::overlap_slowdown,
                "measured fraction by which compute slows while communication runs beside it (`ddlsim calibrate` "
                "writes it); the default of overlap.compute_slowdown for jobs on this device, which wins when given",
                {0, 10}),
            // Merged before the object is read (detail::read_device).
            keys::external<D>("profile",
                              str_schema("a calibration profile written by `ddlsim calibrate` (its \"device\" member "
                                         "is read as this object; keys given here override it); relative to the "
                                         "scenario")),
        }};
    return t;
}

namespace detail {

DeviceSpec read_device(const json& j_in, const std::string& path, const std::string& base_dir) {
    DeviceSpec d;
    if (j_in.is_string()) {
        d.name = profile_or_throw(j_in, path).name;
        set_precision(d, std::nullopt, path + ".precision");
        return d;
    }
    reject_planned_keys(j_in, path, "device");
    std::string file;
    const json j = merge_profile(j_in, path, base_dir, file);
    try {
        ObjectReader r(j, path, tables().device);
        device_keys().read(r, d);
        if (!builtin(d) && j_in.contains("profile")) d.name = "calibrated";
        if (r.has("efficiency") && !j_in.contains("efficiency"))
            d.efficiency_source = models::Source::calibration_profile;
        r.finish();
    } catch (const ScenarioError& e) {
        // A key the profile supplied (not the scenario's own object): the error names the profile file.
        const std::string& at = e.path();
        if (!file.empty() && at.starts_with(path + ".")) {
            const std::string rest = at.substr(path.size() + 1);
            const std::string key = rest.substr(0, rest.find_first_of(".["));
            if (!j_in.contains(key))
                throw ScenarioError(path + ".profile", fmt::format("{}: $.device.{}: {}", file, rest, e.what()));
        }
        throw;
    }
    return d;
}

}  // namespace detail

}  // namespace ddlsim::scenario
