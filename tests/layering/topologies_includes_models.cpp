// Compiled with ddlsim_topo's include path by the layering_topologies_includes_models test: models/ is
// above topologies/, so the include below must fail ("models/device.hpp: No such file or directory").
#include "models/device.hpp"

int topologies_layer_must_not_see_models();
