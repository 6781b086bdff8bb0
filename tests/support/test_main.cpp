// The doctest main of both test executables, ddlsim_tests and ddlsim_validate_tests.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
