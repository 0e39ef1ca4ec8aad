// pipesched: SimAI / AICB workload files; forwards to the headers of simai/ (kept so that
// existing includes still compile).
#pragma once

#include "../simai/order.hpp"
#include "../simai/parse.hpp"
#include "../simai/structure.hpp"
#include "../simai/workload.hpp"
#include "../simai/write.hpp"
