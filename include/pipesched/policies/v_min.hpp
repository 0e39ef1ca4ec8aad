// pipesched: V-Min (v_min); defined with its sibling in v_controllable.hpp (Qi et al., NeurIPS 2024).
#pragma once

#include "v_controllable.hpp"
