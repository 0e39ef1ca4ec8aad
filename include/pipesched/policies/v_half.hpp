// pipesched: V-Half (v_half); defined with its sibling in v_controllable.hpp (Qi et al., NeurIPS 2024).
#pragma once

#include "v_controllable.hpp"
