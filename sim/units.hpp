// Units as value types: simulated time (int64 picoseconds), byte counts,
// bandwidths (bytes per second), FLOP counts and FLOP rates. Conversions are
// explicit and named; a bare double never crosses an interface meaning "seconds".
// Parsing of unit strings ("10Gbps", "5us", "25MiB") lives in unit_parse.hpp.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace ddlsim::sim {

/// A time beyond the event clock's range (int64 picoseconds, about 106 days): the inputs made the simulated
/// time too long. Derives from out_of_range for callers that treat every range error alike.
class TimeOverflow : public std::out_of_range {
public:
    TimeOverflow() : std::out_of_range("simulated time beyond the int64 picosecond range (about 106 days)") {}
};

/// Simulated time as integer picoseconds: a total order with no rounding drift.
class Time {
public:
    constexpr Time() = default;
    [[nodiscard]] static constexpr Time ps(std::int64_t v) { return Time{v}; }
    /// Rounds to the nearest picosecond; throws TimeOverflow above 9e6 s, out_of_range on negative or NaN input.
    [[nodiscard]] static Time seconds(double s) {
        if (std::isnan(s) || s < 0.0) throw std::out_of_range("time out of range (0 .. 9e6 s)");
        if (s > 9.0e6) throw TimeOverflow();
        return Time{static_cast<std::int64_t>(std::llround(s * 1e12))};
    }
    [[nodiscard]] static constexpr Time zero() { return Time{0}; }
    [[nodiscard]] static constexpr Time max() { return Time{std::numeric_limits<std::int64_t>::max()}; }

    [[nodiscard]] constexpr std::int64_t ps() const { return v_; }
    [[nodiscard]] constexpr double seconds() const { return static_cast<double>(v_) * 1e-12; }

    constexpr auto operator<=>(const Time&) const = default;
    /// Throws TimeOverflow instead of wrapping around.
    constexpr Time operator+(Time o) const {
        std::int64_t sum = 0;
        if (__builtin_add_overflow(v_, o.v_, &sum)) throw TimeOverflow();
        return Time{sum};
    }
    constexpr Time operator-(Time o) const { return Time{v_ - o.v_}; }
    constexpr Time& operator+=(Time o) { return *this = *this + o; }
    constexpr Time& operator-=(Time o) {
        v_ -= o.v_;
        return *this;
    }

private:
    constexpr explicit Time(std::int64_t v) : v_(v) {}
    std::int64_t v_ = 0;
};

/// A byte count. Fractional values are allowed (a chunk of S/n bytes).
class Bytes {
public:
    constexpr Bytes() = default;
    constexpr explicit Bytes(double b) : v_(b) {}
    [[nodiscard]] constexpr double value() const { return v_; }
    constexpr auto operator<=>(const Bytes&) const = default;
    constexpr Bytes operator+(Bytes o) const { return Bytes{v_ + o.v_}; }
    constexpr Bytes operator-(Bytes o) const { return Bytes{v_ - o.v_}; }
    constexpr Bytes operator*(double k) const { return Bytes{v_ * k}; }
    constexpr Bytes operator/(double k) const { return Bytes{v_ / k}; }
    constexpr Bytes& operator+=(Bytes o) {
        v_ += o.v_;
        return *this;
    }

private:
    double v_ = 0.0;
};

/// A data rate, stored as bytes per second.
class Bandwidth {
public:
    constexpr Bandwidth() = default;
    [[nodiscard]] static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth{v}; }
    [[nodiscard]] static constexpr Bandwidth bits_per_s(double v) { return Bandwidth{v / 8.0}; }
    [[nodiscard]] constexpr double bytes_per_s() const { return v_; }
    [[nodiscard]] constexpr double bits_per_s() const { return v_ * 8.0; }
    constexpr auto operator<=>(const Bandwidth&) const = default;
    constexpr Bandwidth operator*(double k) const { return Bandwidth{v_ * k}; }
    constexpr Bandwidth operator/(double k) const { return Bandwidth{v_ / k}; }

private:
    constexpr explicit Bandwidth(double v) : v_(v) {}
    double v_ = 0.0;
};

/// Floating-point operations (a count, not a rate).
class Flops {
public:
    constexpr Flops() = default;
    constexpr explicit Flops(double v) : v_(v) {}
    [[nodiscard]] constexpr double value() const { return v_; }
    constexpr auto operator<=>(const Flops&) const = default;
    constexpr Flops operator+(Flops o) const { return Flops{v_ + o.v_}; }
    constexpr Flops operator*(double k) const { return Flops{v_ * k}; }
    constexpr Flops& operator+=(Flops o) {
        v_ += o.v_;
        return *this;
    }

private:
    double v_ = 0.0;
};

/// A compute throughput, FLOP per second.
class FlopRate {
public:
    constexpr FlopRate() = default;
    [[nodiscard]] static constexpr FlopRate per_s(double v) { return FlopRate{v}; }
    [[nodiscard]] constexpr double per_s() const { return v_; }
    constexpr auto operator<=>(const FlopRate&) const = default;
    constexpr FlopRate operator*(double k) const { return FlopRate{v_ * k}; }

private:
    constexpr explicit FlopRate(double v) : v_(v) {}
    double v_ = 0.0;
};

/// Time to move `b` at rate `r` (r > 0).
[[nodiscard]] inline Time transfer_time(Bytes b, Bandwidth r) {
    return Time::seconds(b.value() / r.bytes_per_s());
}
/// Time to execute `f` at rate `r` (r > 0).
[[nodiscard]] inline Time work_time(Flops f, FlopRate r) {
    return Time::seconds(f.value() / r.per_s());
}

}  // namespace ddlsim::sim
