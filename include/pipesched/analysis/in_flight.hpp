// pipesched internals: the end times of results in flight between stages, for the timed
// replay (simulate.hpp): produced by one stage, not yet read by the stage that consumes them
// (timing_model.hpp's consumer_stage). A ring per (stage, tensor) for the common case and a
// hash table for the rest; any order gives the same answers, only the speed depends on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace pipesched::detail {

/// End times of results that a consumer has not read yet, keyed by (stage, microbatch, kind):
/// an open-addressing hash table whose size follows the number of entries, not the schedule.
/// Each result has one consumer, which erases it, so the table holds only the tensors in
/// flight between stages (plus, with fill_with_weight, the units whose I ran and W did not).
class pending_times {
public:
    enum kind : std::uint64_t { forward_result = 0, backward_result = 1, input_gradient_done = 2 };

    [[nodiscard]] static constexpr std::uint64_t key(std::uint32_t stage, std::uint32_t microbatch,
                                                     kind k) noexcept {
        return ((std::uint64_t{stage} << 24 | microbatch) << 2) | k;
    }
    constexpr void insert(std::uint64_t k, double t) {
        if ((size_ + 1) * 2 > slots_.size()) grow();
        std::size_t i = home(k);
        while (slots_[i].key != empty && slots_[i].key != k) i = (i + 1) & mask_;
        if (slots_[i].key == empty) ++size_;
        slots_[i] = {k, t};
        peak_ = size_ > peak_ ? size_ : peak_;
    }
    /// The time stored under k, or `missing`.
    [[nodiscard]] constexpr double find(std::uint64_t k) const noexcept {
        if (size_ == 0) return missing;
        for (std::size_t i = home(k);; i = (i + 1) & mask_) {
            if (slots_[i].key == k) return slots_[i].time;
            if (slots_[i].key == empty) return missing;
        }
    }
    constexpr void erase(std::uint64_t k) noexcept {
        if (size_ == 0) return;
        std::size_t i = home(k);
        while (slots_[i].key != k) {
            if (slots_[i].key == empty) return;
            i = (i + 1) & mask_;
        }
        // Backward-shift deletion: no tombstones, so lookups stay short.
        std::size_t hole = i;
        for (std::size_t j = (i + 1) & mask_; slots_[j].key != empty; j = (j + 1) & mask_) {
            const std::size_t h = home(slots_[j].key);
            const bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
            if (movable) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole] = {empty, 0.0};
        --size_;
    }
    [[nodiscard]] constexpr std::size_t peak() const noexcept { return peak_; }
    [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }

    static constexpr double missing = -1.0; // every stored time is >= 0

private:
    static constexpr std::uint64_t empty = ~std::uint64_t{0};
    struct slot {
        std::uint64_t key = empty;
        double time = 0.0;
    };
    [[nodiscard]] constexpr std::size_t home(std::uint64_t k) const noexcept {
        return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
    }
    constexpr void grow() {
        std::vector<slot> old = std::move(slots_);
        const std::size_t capacity = old.empty() ? 64 : old.size() * 2;
        slots_.assign(capacity, slot{});
        mask_ = capacity - 1;
        size_ = 0;
        for (const slot& e : old) {
            if (e.key != empty) insert(e.key, e.time);
        }
    }

    std::vector<slot> slots_{};
    std::size_t mask_ = 0;
    std::size_t size_ = 0;
    std::size_t peak_ = 0;
};

/// End times of the results in flight between stages, keyed by (stage, microbatch, kind).
/// A stage's results are mostly read in about the order they were produced, a few at a time,
/// so each (stage, forward or backward result) has a small direct-mapped ring indexed by the
/// microbatch modulo its size: one compare finds or frees an entry, where the hash table
/// costs a multiply, a probe loop and a backward shift. A result whose slot is taken (an order
/// that runs far ahead of its consumer, or an explicit schedule in any order) and every
/// input_gradient_done entry go to pending_times, so any order gives the same answers; only
/// the speed depends on it. Memory: stages x 2 x ring slots (bounded by ranks x chunks, not
/// by the microbatches) plus the overflow.
class in_flight_results {
public:
    using kind = pending_times::kind;
    static constexpr double missing = pending_times::missing;

    static constexpr std::uint32_t default_ring_bits = 6; // 64 slots: two 64-action turns in flight

    /// Rings of 2^ring_bits slots, fewer if the microbatches fit (0: one slot, nearly every
    /// result in the overflow table; the tests compare the two).
    constexpr void reset(std::uint32_t stages, std::uint32_t microbatches,
                         std::uint32_t ring_bits = default_ring_bits) {
        const std::uint32_t most = ring_bits < default_ring_bits ? ring_bits : default_ring_bits;
        ring_bits_ = 0;
        while (ring_bits_ < most && (std::uint32_t{1} << ring_bits_) < microbatches) ++ring_bits_;
        ring_mask_ = (std::uint32_t{1} << ring_bits_) - 1;
        const std::size_t slots = (std::size_t{stages} * 2) << ring_bits_;
        tags_.assign(slots, empty);
        times_.assign(slots, 0.0);
    }
    constexpr void insert(std::uint32_t stage, std::uint32_t mb, kind k, double t) {
        if (k != pending_times::input_gradient_done) {
            const std::size_t i = slot(stage, mb, k);
            if (tags_[i] == empty || tags_[i] == mb) {
                if (tags_[i] == empty) {
                    if (overflow_.size() != 0) overflow_.erase(pending_times::key(stage, mb, k)); // a key lives in one place
                    ++in_rings_;
                }
                tags_[i] = mb;
                times_[i] = t;
                note_peak();
                return;
            }
        }
        overflow_.insert(pending_times::key(stage, mb, k), t);
        note_peak();
    }
    [[nodiscard]] constexpr double find(std::uint32_t stage, std::uint32_t mb, kind k) const noexcept {
        if (k != pending_times::input_gradient_done) {
            const std::size_t i = slot(stage, mb, k);
            if (tags_[i] == mb) return times_[i];
        }
        return overflow_.find(pending_times::key(stage, mb, k));
    }
    constexpr void erase(std::uint32_t stage, std::uint32_t mb, kind k) noexcept {
        if (k != pending_times::input_gradient_done) {
            const std::size_t i = slot(stage, mb, k);
            if (tags_[i] == mb) {
                tags_[i] = empty;
                --in_rings_;
                return;
            }
        }
        overflow_.erase(pending_times::key(stage, mb, k));
    }
    /// Most results held at once.
    [[nodiscard]] constexpr std::size_t peak() const noexcept { return peak_; }

    /// The rings' layout as values, for a loop that keeps them in registers (through the
    /// object, every store to a ring could alias them and forces a reload). Its find, insert
    /// and erase are the ones above for the forward and backward results.
    class rings {
    public:
        [[nodiscard]] constexpr double find(std::uint32_t stage, std::uint32_t mb, kind k) const noexcept {
            const std::size_t i = slot(stage, mb, k);
            return tags_[i] == mb ? times_[i] : owner_->overflow_.find(pending_times::key(stage, mb, k));
        }
        [[gnu::always_inline]] constexpr void insert(std::uint32_t stage, std::uint32_t mb, kind k, double t) const {
            const std::size_t i = slot(stage, mb, k);
            if (tags_[i] != empty || owner_->overflow_.size() != 0) return owner_->insert(stage, mb, k, t);
            tags_[i] = mb;
            times_[i] = t;
            ++owner_->in_rings_;
            owner_->note_peak();
        }
        constexpr void erase(std::uint32_t stage, std::uint32_t mb, kind k) const noexcept {
            const std::size_t i = slot(stage, mb, k);
            if (tags_[i] != mb) return owner_->erase(stage, mb, k);
            tags_[i] = empty;
            --owner_->in_rings_;
        }
        /// find(), and erase() when found: for the one reader of a result, one slot lookup.
        [[gnu::always_inline]] constexpr double take(std::uint32_t stage, std::uint32_t mb, kind k) const noexcept {
            const std::size_t i = slot(stage, mb, k);
            if (tags_[i] == mb) {
                tags_[i] = empty;
                --owner_->in_rings_;
                return times_[i];
            }
            const double t = owner_->overflow_.find(pending_times::key(stage, mb, k));
            if (t != missing) owner_->overflow_.erase(pending_times::key(stage, mb, k));
            return t;
        }

    private:
        friend class in_flight_results;
        constexpr rings(in_flight_results& owner) noexcept
            : owner_{&owner}, tags_{owner.tags_.data()}, times_{owner.times_.data()},
              bits_{owner.ring_bits_}, mask_{owner.ring_mask_} {}
        [[nodiscard]] constexpr std::size_t slot(std::uint32_t stage, std::uint32_t mb, kind k) const noexcept {
            return ((std::size_t{stage} * 2 + static_cast<std::size_t>(k)) << bits_) | (mb & mask_);
        }
        in_flight_results* owner_;
        std::uint32_t* tags_;
        double* times_;
        std::uint32_t bits_;
        std::uint32_t mask_;
    };
    [[nodiscard]] constexpr rings view() noexcept { return rings{*this}; }

private:
    static constexpr std::uint32_t empty = 0xFFFFFFFFu; // no microbatch: they are < 0xFFFFFFFF

    [[nodiscard]] constexpr std::size_t slot(std::uint32_t stage, std::uint32_t mb, kind k) const noexcept {
        return ((std::size_t{stage} * 2 + static_cast<std::size_t>(k)) << ring_bits_) | (mb & ring_mask_);
    }
    constexpr void note_peak() noexcept {
        const std::size_t held = in_rings_ + overflow_.size();
        peak_ = held > peak_ ? held : peak_;
    }

    std::vector<std::uint32_t> tags_{};
    std::vector<double> times_{};
    std::uint32_t ring_bits_ = 0;
    std::uint32_t ring_mask_ = 0;
    std::size_t in_rings_ = 0;
    std::size_t peak_ = 0;
    pending_times overflow_{};
};

} // namespace pipesched::detail
