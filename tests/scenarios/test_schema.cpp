// The JSON Schema that `ddlsim schema` prints is generated from the loader's key
// tables; these tests hold it against the loader from the other side: every $ref
// resolves, every example scenario the loader accepts validates, and a scenario with
// a key the schema lacks is rejected by both.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "scenarios/json_reader.hpp"
#include "scenarios/resolved.hpp"
#include "scenarios/scenario.hpp"
#include "tests/support/support.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kExamples = std::string(DDLSIM_SOURCE_DIR) + "/scenarios/examples";

// A validator for the subset of JSON Schema 2020-12 the generator uses.
class MiniValidator {
public:
    explicit MiniValidator(json schema) : root_(std::move(schema)) {}

    bool valid(const json& v) const { return check(root_, v); }

private:
    const json& resolve(const json& s) const {
        if (!s.contains("$ref")) return s;
        const std::string ref = s["$ref"];
        REQUIRE(ref.rfind("#/$defs/", 0) == 0);
        const std::string id = ref.substr(8);
        REQUIRE_MESSAGE(root_["$defs"].contains(id), "dangling $ref " << ref);
        return root_["$defs"][id];
    }

    bool check(const json& schema, const json& v) const {
        const json& s = resolve(schema);
        if (s.contains("oneOf")) {
            int matches = 0;
            for (const auto& alt : s["oneOf"]) matches += check(alt, v) ? 1 : 0;
            if (matches != 1) return false;
        }
        if (s.contains("const") && v != s["const"]) return false;
        if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) return false;
        if (s.contains("type")) {
            const std::string t = s["type"];
            if (t == "object" && !v.is_object()) return false;
            if (t == "array" && !v.is_array()) return false;
            if (t == "string" && !v.is_string()) return false;
            if (t == "number" && !v.is_number()) return false;
            if (t == "integer" && !(v.is_number_integer() || v.is_number_unsigned())) return false;
            if (t == "boolean" && !v.is_boolean()) return false;
            if (t == "null" && !v.is_null()) return false;
        }
        if (v.is_number()) {
            const double x = v.get<double>();
            if (s.contains("minimum") && x < s["minimum"].get<double>()) return false;
            if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return false;
            if (s.contains("maximum") && x > s["maximum"].get<double>()) return false;
        }
        if (v.is_string() && s.contains("pattern") &&
            !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
            return false;
        if (v.is_array() && s.contains("items"))
            for (const auto& item : v)
                if (!check(s["items"], item)) return false;
        if (v.is_object() && s.contains("properties")) {
            for (const auto& [k, item] : v.items()) {
                if (!s["properties"].contains(k)) {
                    if (s.value("additionalProperties", true) == false) return false;
                    continue;
                }
                if (!check(s["properties"][k], item)) return false;
            }
        }
        if (v.is_object() && s.contains("required"))
            for (const auto& r : s["required"])
                if (!v.contains(r.get<std::string>())) return false;
        return true;
    }

    json root_;
};

std::vector<json> example_scenarios() {
    std::vector<json> out;
    for (const auto& e : fs::directory_iterator(fs::path(DDLSIM_SOURCE_DIR) / "scenarios" / "examples")) {
        std::ifstream in(e.path());
        out.push_back(json::parse(in));
    }
    return out;
}

void collect_refs(const json& j, std::vector<std::string>& refs) {
    if (j.is_object()) {
        if (j.contains("$ref")) refs.push_back(j["$ref"]);
        for (const auto& [k, v] : j.items()) collect_refs(v, refs);
    } else if (j.is_array()) {
        for (const auto& v : j) collect_refs(v, refs);
    }
}

}  // namespace

TEST_CASE("schema: every $ref resolves and every object forbids unknown keys") {
    const json schema = ddlsim::scenario::scenario_schema();
    std::vector<std::string> refs;
    collect_refs(schema, refs);
    CHECK(refs.size() >= 10);
    for (const auto& r : refs) {
        CAPTURE(r);
        CHECK(schema["$defs"].contains(r.substr(8)));
    }
    CHECK(schema["additionalProperties"] == false);
    for (const auto& entry : schema["$defs"].items()) {
        const std::string id = entry.key();  // not structured bindings: clang 14 cannot capture those
        const json& def = entry.value();
        CAPTURE(id);
        CHECK(def["additionalProperties"] == false);
        for (const auto& prop : def["properties"].items())
            CHECK_MESSAGE(prop.value().contains("description"), prop.key());
    }
}

TEST_CASE("schema: the loader and the schema agree on the examples and on mutations") {
    const MiniValidator v(ddlsim::scenario::scenario_schema());
    for (const json& ex : example_scenarios()) {
        CAPTURE(ex.dump());
        CHECK_NOTHROW((void)ddlsim::scenario::load_scenario(ex, kExamples));
        CHECK(v.valid(ex));
        // A typo'd key: both reject.
        json typo = ex;
        typo["network"]["bandwith"] = "10Gbps";
        CHECK_FALSE(v.valid(typo));
        CHECK_THROWS_AS((void)ddlsim::scenario::load_scenario(typo, kExamples), ddlsim::scenario::ScenarioError);
        // An unknown enum value: both reject.
        json bad_enum = ex;
        bad_enum["network"]["model"] = "packet";
        CHECK_FALSE(v.valid(bad_enum));
        CHECK_THROWS_AS((void)ddlsim::scenario::load_scenario(bad_enum, kExamples), ddlsim::scenario::ScenarioError);
        // A bandwidth in the wrong unit family: both reject.
        json bad_unit = ex;
        bad_unit["network"]["latency"] = "5 parsecs";
        CHECK_FALSE(v.valid(bad_unit));
        CHECK_THROWS_AS((void)ddlsim::scenario::load_scenario(bad_unit, kExamples), ddlsim::scenario::ScenarioError);
        // A bandwidth without its unit (bits or bytes?): both reject.
        if (ex["network"].contains("bandwidth")) {
            json bare = ex;
            bare["network"]["bandwidth"] = 1.25e9;
            CHECK_FALSE(v.valid(bare));
            CHECK_THROWS_AS((void)ddlsim::scenario::load_scenario(bare, kExamples), ddlsim::scenario::ScenarioError);
        }
    }
}

TEST_CASE("schema: every optional key the schema documents is one the loader accepts") {
    // Start from a minimal valid star scenario and add each documented optional key with a
    // value the schema accepts; the loader must take it. Keys that need a particular kind
    // (ps, two_tier, custom) are added in a matching base.
    const json base = ddlsim::testing::star_scenario({.batch_size = 8});
    const MiniValidator v(ddlsim::scenario::scenario_schema());
    const std::vector<std::pair<std::string, json>> additions{
        {"/iterations", 3},
        {"/seed", 42},
        {"/description", "text"},
        {"/placement", {"h3", "h2", "h1", "h0"}},
        {"/model", {{"name", "resnet50"}, {"dtype", "fp16"}}},
        {"/device",
         {{"name", "A100"},
          {"precision", "tf32"},
          {"peak_flops", "100TFLOPS"},
          {"efficiency", 0.4},
          {"memory_bandwidth", "2TBps"},
          {"samples_per_s", 900}}},
        {"/architecture", {{"kind", "allreduce"}, {"algorithm", "ring"}}},
        {"/architecture",
         {{"kind", "ps"},
          {"servers", 2},
          {"placement", "dedicated"},
          {"aggregation_rate", "10GBps"},
          {"server_placement", {"h4", "h5"}}}},
        {"/architecture", {{"kind", "gossip"}, {"graph", "ring"}}},
        {"/architecture", {{"kind", "gossip"}, {"graph", "random_matching"}}},
        {"/architecture", {{"kind", "allreduce"}, {"algorithm", "double_tree"}, {"segment_size", "4MB"}}},
        {"/architecture", {{"kind", "allreduce"}, {"algorithm", "halving_doubling"}}},
        {"/architecture",
         {{"kind", "ps"}, {"servers", 2}, {"sharding", "balanced"}, {"split_size", "4MB"}, {"per_tensor", true}}},
        {"/architecture", {{"kind", "ps"}, {"style", "byteps"}, {"servers", 0}}},
        {"/sync", {{"kind", "bsp"}}},
        {"/compression", {{"kind", "none"}}},
        {"/overlap", {{"wfbp", false}, {"fusion", "none"}, {"priority", false}}},
        {"/network/hosts", 6},
        {"/network/model", "analytic"},
        {"/network/routing", "dmodk"},
    };
    for (const auto& addition : additions) {
        const std::string& ptr = addition.first;
        const json& value = addition.second;
        CAPTURE(ptr);
        json j = base;
        j[json::json_pointer(ptr)] = value;
        if (ptr == "/architecture" && value["kind"] == "ps") j["network"]["hosts"] = 6;
        CHECK(v.valid(j));
        CHECK_NOTHROW((void)ddlsim::scenario::load_scenario(j));
    }
    json tt = base;
    tt["network"] = {{"topology", "two_tier"}, {"gpus_per_node", 2}, {"num_nodes", 3},
                     {"bandwidth", "100Gbps"}, {"latency", "2us"},   {"intra_bandwidth", "300Gbps"},
                     {"intra_latency", "1us"}};
    CHECK(v.valid(tt));
    CHECK_NOTHROW((void)ddlsim::scenario::load_scenario(tt));
    json layers = base;
    layers["model"] = {
        {"layers",
         {{{"name", "a"}, {"params", 10}, {"fwd_flops", 1e6}},
          {{"name", "b"}, {"params", 10}, {"fwd_time", "1ms"}, {"bwd_time", "2ms"}, {"update_time", "10us"}}}}};
    CHECK(v.valid(layers));
    CHECK_NOTHROW((void)ddlsim::scenario::load_scenario(layers));
}

namespace {

// Scenarios in which each object of the schema sits, each loadable; a key with a schema default is written out at
// its default into every context that holds its object and accepts the key.
std::vector<json> default_contexts() {
    const json net = ddlsim::testing::star_network({.latency = "1us"});
    const json base{{"workers", 4},
                    {"model", {{"name", "resnet50"}}},
                    {"batch_size", 32},
                    {"device", {{"name", "V100"}}},
                    {"network", net}};
    std::vector<json> out;
    auto add = [&](json patch) {
        json j = base;
        j.merge_patch(patch);
        out.push_back(j);
    };
    add({{"architecture", {{"kind", "ps"}}},
         {"overlap", {{"fusion", "buffer"}}},
         {"compression", {{"kind", "topk"}}},
         {"stragglers", {{"distribution", "periodic"}}}});
    add({{"architecture", {{"kind", "allreduce"}}},
         {"overlap", {{"priority", true}}},
         {"compression", {{"kind", "qsgd"}}},
         {"stragglers", {{"distribution", "lognormal"}}}});
    add({{"architecture", {{"kind", "ps"}, {"style", "byteps"}, {"servers", 1}}}, {"compression", {{"kind", "fp16"}}}});
    add({{"architecture", {{"kind", "ps"}}}, {"sync", {{"kind", "fedavg"}}}, {"compression", {{"kind", "powersgd"}}}});
    add({{"architecture", {{"kind", "allreduce"}}}, {"sync", {{"kind", "diloco"}, {"period", 2}, {"islands", 2}}}});
    add({{"model",
          {{"name", nullptr},
           {"transformer", {{"layers", 2}, {"hidden", 256}, {"heads", 4}, {"seq_len", 128}, {"vocab", 1000}}}}}});
    add({{"architecture", {{"kind", "gossip"}}},
         {"convergence", {{"task", "synthetic_mlp"}}},
         {"compression", {{"kind", "none"}}}});
    add({{"network", {{"topology", "leaf_spine"}, {"hosts_per_leaf", 2}, {"spines", 2}}},
         {"architecture", {{"kind", "allreduce"}}},
         {"convergence", {{"target_accuracy", 0.5}}}});
    add({{"network",
          {{"topology", "two_tier"}, {"gpus_per_node", 2}, {"intra_bandwidth", "100GBps"}, {"intra_latency", "1us"}}},
         {"architecture", {{"kind", "allreduce"}}},
         {"compression", {{"kind", "randomk"}}}});
    add({{"sharding", {{"stage", 3}}}});
    add({{"parallelism", json::object()}});
    add({{"parallelism", {{"pipeline", 2}}}});
    add({{"model",
          {{"name", nullptr},
           {"transformer", {{"layers", 2}, {"hidden", 256}, {"heads", 4}, {"seq_len", 128}, {"vocab", 1000}}}}},
         {"parallelism", {{"tensor", 2}}}});
    add({{"model",
          {{"name", nullptr},
           {"transformer", {{"layers", 2}, {"hidden", 256}, {"heads", 4}, {"seq_len", 128}, {"vocab", 1000}}}}},
         {"parallelism", {{"tensor", 2}, {"sequence_parallel", true}}}});  // tp_overlap applies
    add({{"model",
          {{"name", nullptr},
           {"transformer", {{"layers", 2}, {"hidden", 256}, {"heads", 4}, {"seq_len", 128}, {"vocab", 1000}}}}},
         {"parallelism", {{"context", 2}}}});  // context_algorithm applies
    add({{"model",
          {{"name", nullptr},
           {"transformer",
            {{"layers", 2},
             {"hidden", 256},
             {"heads", 4},
             {"seq_len", 128},
             {"vocab", 1000},
             {"experts", 4},
             {"experts_per_token", 2}}}}},
         {"parallelism", {{"expert", 2}}}});
    add({{"network",
          {{"topology", "two_tier"}, {"gpus_per_node", 2}, {"intra_bandwidth", "100GBps"}, {"intra_latency", "1us"}}},
         {"sharding", {{"stage", 1}}},
         {"overlap", {{"fusion", "buffer"}}}});
    return out;
}

}  // namespace

TEST_CASE("schema: every default is the loader's (writing it out leaves the resolved scenario unchanged)") {
    const json schema = ddlsim::scenario::scenario_schema();
    const std::map<std::string, std::string> where{{"network", "/network"},
                                                   {"architecture", "/architecture"},
                                                   {"sync", "/sync"},
                                                   {"overlap", "/overlap"},
                                                   {"sharding", "/sharding"},
                                                   {"parallelism", "/parallelism"},
                                                   {"convergence", "/convergence"},
                                                   {"stragglers", "/stragglers"},
                                                   {"model", "/model"},
                                                   {"compression", "/compression"},
                                                   {"device", "/device"},
                                                   {"transformer", "/model/transformer"}};
    std::vector<std::pair<std::string, std::string>> keys;  // (object id, key) with a default
    auto collect = [&](const std::string& id, const json& def) {
        for (const auto& [key, s] : def.at("properties").items())
            if (s.contains("default")) keys.emplace_back(id, key);
    };
    collect("scenario", schema);
    for (const auto& [id, def] : schema.at("$defs").items())
        if (def.contains("properties")) collect(id, def);
    CHECK(keys.size() >= 38);
    const auto contexts = default_contexts();
    for (const auto& entry : keys) {
        const std::string& id = entry.first;  // not a structured binding: clang 14 cannot capture those
        const std::string& key = entry.second;
        const json& def = id == "scenario" ? schema : schema.at("$defs").at(id);
        const json value = def.at("properties").at(key).at("default");
        CAPTURE(id);
        CAPTURE(key);
        if (id == "job") continue;  // the job object repeats the root's keys, checked there
        REQUIRE_MESSAGE((id == "scenario" || where.contains(id)), "no context holds object " << id);
        const json::json_pointer at(id == "scenario" ? "" : where.at(id));
        int accepted = 0;
        for (const json& ctx : contexts) {
            if (!ctx.contains(at) || ctx.at(at).contains(key)) continue;
            json with = ctx;
            with[at][key] = value;
            std::optional<ddlsim::scenario::Scenario> loaded;
            try {
                loaded = ddlsim::scenario::load_scenario(with);
            } catch (const ddlsim::scenario::ScenarioError&) {
                continue;  // the key does not apply in this context
            }
            ++accepted;
            const json plain = ddlsim::scenario::resolved_scenario(ddlsim::scenario::load_scenario(ctx));
            const json explicit_default = ddlsim::scenario::resolved_scenario(*loaded);
            CHECK(plain == explicit_default);
            // The resolved scenario echoes the key, so the comparison above saw it; a pipeline of one stage, a
            // tensor, context or expert split over one rank is no model parallelism, which it leaves out as a whole
            // (both sides above had no parallelism block).
            const auto degree = [](const std::string& k) {
                return k == "pipeline" || k == "tensor" || k == "expert" || k == "context";
            };
            bool degrees = false;  // the context's own parallelism block names a degree
            for (const auto& kv : ctx.at(at).items()) degrees = degrees || degree(kv.key());
            if (id == "parallelism" && degree(key) && !degrees) {
                CHECK(!explicit_default.contains("parallelism"));
                continue;
            }
            CHECK(explicit_default.at(at).contains(key));
        }
        CHECK_MESSAGE(accepted > 0, "no context accepts " << id << "." << key << " = " << value.dump());
    }
}
