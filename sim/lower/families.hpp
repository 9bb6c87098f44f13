// Parsers of the schedule families (one per implementation folder in sim/lower/).
#pragma once
#include <memory>

#include "model/json_reader.hpp"
#include "lower/schedule.hpp"

namespace attnsim {

/// "explicit": warp programs written out in the JSON (sim/lower/explicit_schedule.cpp).
std::unique_ptr<Schedule> parse_explicit_schedule(JsonReader& r);
/// "fa4_sm100": FlashAttention-4's forward schedule and its knobs (sim/lower/fa4/).
std::unique_ptr<Schedule> parse_fa4_schedule(JsonReader& r);
/// "fa3_sm90": FlashAttention-3's forward schedule on Hopper (sim/lower/fa3/).
std::unique_ptr<Schedule> parse_fa3_schedule(JsonReader& r);
/// "fa2_sm80": a FlashAttention-2-style kernel without warp specialization (sim/lower/fa2/).
std::unique_ptr<Schedule> parse_fa2_schedule(JsonReader& r);
/// "blackflash": 1 TMA producer warp + 8 mma.sync consumer warps (sim/lower/blackflash/).
std::unique_ptr<Schedule> parse_blackflash_schedule(JsonReader& r);

}  // namespace attnsim
