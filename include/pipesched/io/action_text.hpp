// The action type and its PyTorch text form belong to the vocabulary (pipesched/action.hpp);
// this header keeps old includes working.
#pragma once

#include "../action.hpp"
