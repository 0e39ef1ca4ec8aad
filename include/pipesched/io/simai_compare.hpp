// pipesched: SimAI's order against a training framework's; forwards to simai/ (kept so that
// existing includes still compile: it brings io/simai.hpp as it always did).
#pragma once

#include "../simai/compare_catalog.hpp"
#include "simai.hpp"
