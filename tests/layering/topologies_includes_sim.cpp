// Compiled with ddlsim_topo's include path by the layering_topologies_includes_sim test: topologies/
// may include sim/, the layer below it, so this compiles.
#include "sim/network.hpp"

int topologies_layer_sees_sim();
