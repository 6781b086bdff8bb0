// Compiled with ddlsim_validate's include path by the layering_validate_includes_tools test: tools/
// (the command line) is above validate/, so the include below must fail.
#include "tools/sweep.hpp"

int validate_layer_must_not_see_tools();
