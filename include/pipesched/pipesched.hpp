// pipesched: umbrella header for the core (vocabulary, policies, analysis).
// The modules (io/, chakra/, simai/, search/) are opt-in includes.
#pragma once

#include "event.hpp"
#include "policy.hpp"
#include "shape.hpp"
#include "sink.hpp"
#include "version.hpp"

#include "policies/gpipe.hpp"
#include "policies/interleaved_1f1b.hpp"
#include "policies/looped_bfs.hpp"
#include "policies/one_f_one_b.hpp"
#include "policies/zb_h1.hpp"
#include "policies/zb_h2.hpp"
#include "policies/interleaved_zero_bubble.hpp"
#include "policies/zbv.hpp"
#include "policies/dualpipe_v.hpp"
#include "policies/v_min.hpp"
#include "policies/v_half.hpp"
#include "policies/explicit_schedule.hpp"
#include "catalog.hpp"
#include "policies/any_schedule.hpp"
#include "analysis/validate.hpp"
#include "analysis/simulate.hpp"
#include "iteration.hpp"
#include "analysis/validate_iteration.hpp"
#include "analysis/simulate_iteration.hpp"
