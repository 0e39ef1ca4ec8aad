// pipesched plan --search (plan_search.cpp): called by plan.cpp once it has read the model, the
// launch line, the GPU and the options.
#pragma once

#include <string_view>

#include <pipesched/plan/megatron_args.hpp>
#include <pipesched/plan/plan.hpp>

#include "cli.hpp"

namespace pipesched::cli {

int run_plan_search(const parsed_args& args, const pipesched::plan::megatron_arguments& ma,
                    const pipesched::plan::gpu_spec& g, const pipesched::plan::plan_options& o,
                    std::string_view format);

} // namespace pipesched::cli
