// A relative tolerance for the tests' floating-point checks.
//
// doctest::Approx(x).epsilon(e) accepts |value - x| < e x (scale + max(|value|, |x|)) with scale 1 by default: for
// quantities far below 1 (seconds of a kernel, a fraction of a link) that is an absolute tolerance of e, and a check
// such as Approx(2.4e-3).epsilon(0.02) passes for any value between -0.018 and 0.022 -- it cannot fail. approx()
// is Approx with scale 0, so the tolerance is e times the larger magnitude, whatever the unit; an expected 0 keeps
// scale 1 (an absolute e), since no relative tolerance around 0 admits rounding noise.
#pragma once

#include <doctest/doctest.h>

namespace ddlsim::testing {

inline doctest::Approx approx(double expected) {
    return doctest::Approx(expected).scale(expected == 0.0 ? 1.0 : 0.0);
}

}  // namespace ddlsim::testing
