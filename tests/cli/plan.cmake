# Command-line tests of `pipesched plan` (included from CMakeLists.txt, which defines the helpers).

set(plan_data "${PROJECT_SOURCE_DIR}/tests/data/plan")
set(plan_8b --model "${plan_data}/llama3_8b.json" --gpus 8)
set(plan_8b_args -- --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --seq-length 8192
    --global-batch-size 16 --sequence-parallel)

pipesched_cli_test(plan_text ARGS plan ${plan_8b} ${plan_8b_args} --lr 3e-4 --bf16
    STDOUT "^model llama: 8\\.03 B parameters, 32 layers\n.*\nrecommended: [^\n]+ s per iteration, [0-9.]+ GiB on rank [0-3] of 72\\.00 GiB\n.*note: ignored: --lr\n$"
    STDERR "^$")
pipesched_cli_test(plan_json ARGS plan ${plan_8b} --format json ${plan_8b_args}
    STDOUT "^\\{\"model\":\"llama\",\"gpu\":\"h100\",\"parameters_total\":8030261248,\"mtp_parameters\":0,.*\"ranks\":\\[\\{\"rank\":0,\"layers\":8,.*\"schedules\":\\[\\{\"name\":.*\"recommended\":\\{\"name\":.*\"megatron_theoretical\":\\{\"weight_and_optimizer_mb\":[0-9.]+,\"activation_mb\":[0-9.]+,\"total_mb\":[0-9.]+\\},\"ignored\":\\[\\]\\}\n$")
# Megatron arguments alone, and a layout string fixing two chunks per rank.
pipesched_cli_test(plan_megatron_only ARGS plan --microbatches 8 -- --num-layers 8 --hidden-size 1024
    --num-attention-heads 8 --vocab-size 32000 --seq-length 2048 --pipeline-model-parallel-size 2
    --pipeline-model-parallel-layout Et*2|tt|tt|ttL
    STDOUT "Interleaved1F1B \\(v=2\\).*recommended: ")
# Nothing fits: exit 1, the report says by how much and what would help, in text and in JSON.
pipesched_cli_test(plan_nothing_fits ARGS plan ${plan_8b} --gpu-memory 12 ${plan_8b_args}
    EXIT 1 STDOUT "\nnothing fits in 4\\.00 GiB per GPU; closest: [^\n]+ GiB over\\)\\. [^\n]+\n")
pipesched_cli_test(plan_nothing_fits_json ARGS plan ${plan_8b} --gpu-memory 12 --format json ${plan_8b_args}
    EXIT 1 STDOUT "\"recommended\":null,\"advice\":\"nothing fits")
# --emit writes the recommended schedule.
pipesched_cli_test(plan_emit_csv ARGS plan ${plan_8b} --emit csv --out "${CMAKE_CURRENT_BINARY_DIR}/plan_emit.csv"
    ${plan_8b_args} STDOUT "\nwrote 1 file: [^\n]*plan_emit\\.csv\n")
pipesched_cli_test(plan_emit_chakra ARGS plan ${plan_8b} --emit chakra --out "${CMAKE_CURRENT_BINARY_DIR}/plan_emit"
    ${plan_8b_args} STDOUT "\nwrote 4 files: [^\n]*plan_emit\\.0\\.et \\.\\.\\. [^\n]*plan_emit\\.3\\.et\n")
# Measured stage times replace the operation model; the transfers stay. 1F1B by hand: each
# stage but the last waits 0.091 ms after its F for the send of 33.5 MB over NVLink (450 GB/s x
# 0.82), each but the first as long after its B: (m - 1) x (F + B of the slowest stage) + every
# stage's F + B = 15 x 36.09 + 126.54 = 667.9 ms, plus six 30 us latencies between ranks and
# the optimizer step, 30 bytes x 1.14 B parameters at 0.65 x 3.35 TB/s (15.7 ms): 683.8 ms.
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/plan_times.txt"
    CONTENT "# one line per stage\nF=0.010,B=0.020\nF=0.010,I=0.010,W=0.010\nF=0.010,B=0.020\nF=0.012,B=0.024 # loss\n")
pipesched_cli_test(plan_stage_times ARGS plan ${plan_8b} --stage-times "${CMAKE_CURRENT_BINARY_DIR}/plan_times.txt"
    --no-autoschedule ${plan_8b_args} STDOUT "\n1F1B +0\\.68[34] s ")

# Bad input: exit 2, one line naming the problem.
pipesched_cli_error(plan_nothing_given "plan needs --model config.json" plan)
pipesched_cli_error(plan_unknown_gpu "--gpu: unknown GPU 'x100'" plan ${plan_8b} --gpu x100 ${plan_8b_args})
pipesched_cli_error(plan_gpus_not_multiple "--gpus 7 is not a multiple of TP x PP x CP = 8"
    plan --model "${plan_data}/llama3_8b.json" --gpus 7 ${plan_8b_args})
pipesched_cli_error(plan_bad_megatron_value "--tensor-model-parallel-size: expected a whole number, got 'two'"
    plan ${plan_8b} -- --tensor-model-parallel-size two --seq-length 8192 --global-batch-size 16)
pipesched_cli_error(plan_no_batch "give --global-batch-size after -- or --microbatches M"
    plan ${plan_8b} -- --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --seq-length 8192)
pipesched_cli_error(plan_layers_not_divisible "--num-layers 32 is not divisible by --pipeline-model-parallel-size 3"
    plan --model "${plan_data}/llama3_8b.json" --microbatches 8 -- --pipeline-model-parallel-size 3 --seq-length 8192)
pipesched_cli_error(plan_emit_unwritable "cannot write [^\n]*/no_such_folder/x[.]csv: No such file or directory"
    plan ${plan_8b} --emit csv --out "${CMAKE_CURRENT_BINARY_DIR}/no_such_folder/x.csv" ${plan_8b_args})
pipesched_cli_error(plan_emit_without_out "--emit needs --out PATH" plan ${plan_8b} --emit csv ${plan_8b_args})
pipesched_cli_error(plan_efficiency_range "--efficiency must be at least 1e-06 and at most 1, got '1[.]5'"
    plan ${plan_8b} --efficiency 1.5 ${plan_8b_args})
# Wrong input that once came out as "nothing fits" (exit 1) is exit 2 naming the flag (issue 32).
pipesched_cli_error(plan_efficiency_denormal "--efficiency must be at least 1e-06 and at most 1, got '1e-310'"
    plan ${plan_8b} --efficiency 1e-310 ${plan_8b_args})
pipesched_cli_error(plan_memory_at_reserve "--gpu-memory: 8[.]00 GiB is not above the memory reserve of 8[.]00 GiB [(]--memory-reserve[)]"
    plan ${plan_8b} --gpu-memory 8 ${plan_8b_args})
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/plan_times_three.txt" CONTENT "F=1,B=2\nF=1,B=2\nF=1,B=2\n")
pipesched_cli_error(plan_stage_times_count "--stage-times: times for 3 stages; give one per pipeline rank [(]4[)] or one per stage of a chunk count the layers allow [(]8, 16, 32[)]"
    plan ${plan_8b} --stage-times "${CMAKE_CURRENT_BINARY_DIR}/plan_times_three.txt" ${plan_8b_args})
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/plan_times_huge.txt" CONTENT "F=1e308,B=2\nF=1,B=2\nF=1,B=2\nF=1,B=2\n")
pipesched_cli_error(plan_stage_times_overflow "--stage-times: the measured F times overflow: 16 microbatches through stages 0[.][.]0"
    plan ${plan_8b} --stage-times "${CMAKE_CURRENT_BINARY_DIR}/plan_times_huge.txt" ${plan_8b_args})
# Megatron refuses these, so plan does: TP 16 over 8 key/value heads, 3 virtual stages of 8 layers.
pipesched_cli_error(plan_tp_kv_heads "--tensor-model-parallel-size: 16 does not divide --num-query-groups 8 [(]the key/value heads, which tensor parallelism splits[)]"
    plan --model "${plan_data}/llama3_8b.json" --microbatches 8 -- --tensor-model-parallel-size 16 --seq-length 8192)
pipesched_cli_error(plan_virtual_stages "--num-virtual-stages-per-pipeline-rank 3: rank 0's 8 layers do not divide into 3 chunks"
    plan --model "${plan_data}/llama3_8b.json" --microbatches 8 -- --pipeline-model-parallel-size 4
    --num-virtual-stages-per-pipeline-rank 3 --seq-length 8192)
# A model type whose weights plan cannot count is refused, naming what it does not understand.
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/plan_gpt_oss.json"
    CONTENT "{\"model_type\": \"gpt_oss\", \"hidden_size\": 2880, \"num_hidden_layers\": 24, \"num_attention_heads\": 64,
 \"num_key_value_heads\": 8, \"head_dim\": 64, \"vocab_size\": 201088, \"intermediate_size\": 2880,
 \"num_local_experts\": 32, \"experts_per_token\": 4, \"swiglu_limit\": 7.0, \"attention_bias\": true}\n")
pipesched_cli_error(plan_unknown_model_type "plan_gpt_oss[.]json:1:16: \"model_type\" \"gpt_oss\" is not supported [(]plan counts the weights of llama, [^)]*gemma2[^)]*[)]; keys plan does not understand: experts_per_token, swiglu_limit"
    plan --model "${CMAKE_CURRENT_BINARY_DIR}/plan_gpt_oss.json" ${plan_8b_args})
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/plan_missing_key.json"
    CONTENT "{\"model_type\": \"llama\",\n \"hidden_size\": 4096,\n \"num_hidden_layers\": 32}\n")
pipesched_cli_error(plan_config_missing_key "plan_missing_key.json: missing key \"num_attention_heads\""
    plan --model "${CMAKE_CURRENT_BINARY_DIR}/plan_missing_key.json" ${plan_8b_args})
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/plan_negative.json"
    CONTENT "{\"model_type\": \"llama\",\n \"hidden_size\": -4096}\n")
pipesched_cli_error(plan_config_negative "plan_negative.json:2:17: \"hidden_size\" must not be negative"
    plan --model "${CMAKE_CURRENT_BINARY_DIR}/plan_negative.json" ${plan_8b_args})
pipesched_cli_error(plan_config_directory "cannot"
    plan --model "${plan_data}" ${plan_8b_args})
if(EXISTS /dev/zero)
    pipesched_cli_error(plan_config_dev_zero "/dev/zero" plan --model /dev/zero ${plan_8b_args})
endif()
pipesched_cli_error(plan_stage_times_bad "plan_times_bad.txt: line 2"
    plan ${plan_8b} --stage-times "${CMAKE_CURRENT_BINARY_DIR}/plan_times_bad.txt" ${plan_8b_args})
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/plan_times_bad.txt" CONTENT "F=1,B=2\nF=x\n")

# plan --search: the layout search (plan/layout_search.hpp). Knobs set after -- stay fixed.
set(plan_search_8b --model "${plan_data}/llama3_8b.json" --gpus 8)
set(plan_search_args -- --seq-length 4096 --global-batch-size 16)
pipesched_cli_test(plan_search_text ARGS plan --search --top 3 ${plan_search_8b} ${plan_search_args}
    STDOUT "^layout search: llama on 8 x h100, global batch 16 x 4096 tokens\n[0-9]+ layouts: [0-9]+ replayed with every schedule \\([0-9]+ also with the auto-scheduler\\), [0-9]+ skipped by the exact bounds \\(docs/plan\\.md\\)\n\nfastest 3 .*\n1  [0-9] .*\n2  [0-9] .*\n3  [0-9] .*\nPareto front, .*\nMegatron-LM flags of #1 \\(append to the model's own\\): --tensor-model-parallel-size [0-9]+ --pipeline-model-parallel-size "
    STDERR "^$")
pipesched_cli_test(plan_search_fixed_json ARGS plan --search --top 2 --format json ${plan_search_8b} ${plan_search_args}
    --tensor-model-parallel-size 2 --micro-batch-size 2
    STDOUT "^\\{\"model\":\"llama\",\"gpu\":\"h100\",\"gpus\":8,\"layouts\":[0-9]+,.*\"candidates\":\\[\\{\"tensor_parallel\":2,\"pipeline_parallel\":[0-9]+,\"data_parallel\":[0-9]+,\"context_parallel\":[0-9]+,\"expert_parallel\":1,\"micro_batch_size\":2,\"recompute\":\"[a-z]+\",.*\"schedule\":\\{\"name\":\"[^\"]+\",\"chunks\":[0-9]+,.*\"iteration_time_s\":[0-9.e-]+,.*\"peak_bytes\":[0-9.e+]+,.*\"runtimes\":\\[\"[a-z-]+\".*\"megatron_args\":\\[\"--tensor-model-parallel-size\",\"2\",.*\\},\\{\"tensor_parallel\":2,.*\\],\"pareto\":\\[\\{.*\\],\"advice\":\"[^\"]*\"\\}\n$")
pipesched_cli_test(plan_search_megatron_runtime ARGS plan --search --top 2 --runtime megatron --no-autoschedule
    ${plan_search_8b} ${plan_search_args}
    STDOUT "\n1  [^\n]* (1F1B|Interleaved1F1B v=[0-9]+|[a-z_]*combined_1f1b( v=[0-9]+)?) [^\n]*\n2  [^\n]* (1F1B|Interleaved1F1B v=[0-9]+|[a-z_]*combined_1f1b( v=[0-9]+)?) [^\n]*\n")
# No layout fits: exit 1 with the closest miss.
pipesched_cli_test(plan_search_nothing_fits ARGS plan --search --gpu-memory 10 --no-autoschedule ${plan_search_8b}
    ${plan_search_args} EXIT 1 STDOUT "\nno layout fits in 2\\.00 GiB per GPU; closest: [^\n]+ GiB over\\)\n$")
pipesched_cli_error(plan_search_needs_gpus "--search needs --gpus N" plan --search
    --model "${plan_data}/llama3_8b.json" ${plan_search_args})
pipesched_cli_error(plan_search_top_zero "--top must be at least 1, got '0'" plan --search --top 0
    ${plan_search_8b} ${plan_search_args})
pipesched_cli_error(plan_top_without_search "--top applies only with --search" plan --top 3 ${plan_8b} ${plan_8b_args})
pipesched_cli_error(plan_search_bad_runtime "--runtime must be megatron, pytorch or any, got 'deepspeed'"
    plan --search --runtime deepspeed ${plan_search_8b} ${plan_search_args})
pipesched_cli_error(plan_search_emit "--emit writes one schedule: run plan without --search on the layout it picks"
    plan --search --emit csv --out x.csv ${plan_search_8b} ${plan_search_args})
pipesched_cli_error(plan_search_fixed_layers "--num-virtual-stages-per-pipeline-rank fixes the layers of each stage"
    plan --search ${plan_search_8b} ${plan_search_args} --pipeline-model-parallel-size 2
    --num-virtual-stages-per-pipeline-rank 2)
pipesched_cli_error(plan_search_no_layout "no legal layout" plan --search --model "${plan_data}/llama3_8b.json" --gpus 7
    -- --seq-length 4096 --global-batch-size 4)
# The outputs docs/plan.md prints, regenerated (tests/check_doc_output.cmake).
add_test(NAME cli.doc_output_plan
    COMMAND "${CMAKE_COMMAND}" "-DTOOL=$<TARGET_FILE:pipesched_cli>" "-DPAGE=${PROJECT_SOURCE_DIR}/docs/plan.md"
            "-DROOT=${PROJECT_SOURCE_DIR}" -P "${PROJECT_SOURCE_DIR}/tests/check_doc_output.cmake")
set_tests_properties(cli.doc_output_plan PROPERTIES LABELS cli)
# The cluster's links: new flags, the h800 preset, and bad values naming the flag.
pipesched_cli_test(plan_h800_links ARGS plan ${plan_8b} --gpu h800 --gpus-per-node 4 --nvlink-gbytes 200
    --nic-gbits 100 ${plan_8b_args} --fp8-format hybrid --optimizer sgd --grad-reduce-in-bf16 --tp-comm-overlap
    STDOUT "^model llama: [^\n]*\ngpu h800: 989\\.5 TFLOP/s, [^\n]*\n.*recommended: ")
pipesched_cli_error(plan_nvlink_zero "--nvlink-gbytes must be at least 0.001" plan ${plan_8b} --nvlink-gbytes 0 ${plan_8b_args})
pipesched_cli_error(plan_nic_negative "--nic-gbits needs a finite number >= 0, got .-400." plan ${plan_8b} --nic-gbits -400 ${plan_8b_args})
pipesched_cli_error(plan_gpus_per_node_divides "--gpus-per-node 3 does not divide the 8 GPUs"
    plan ${plan_8b} --gpus-per-node 3 ${plan_8b_args})
pipesched_cli_error(plan_gpus_per_node_zero "--gpus-per-node" plan ${plan_8b} --gpus-per-node 0 ${plan_8b_args})
pipesched_cli_error(plan_fp8_format "--fp8-format: expected hybrid or e4m3, got 'e5m2'"
    plan ${plan_8b} ${plan_8b_args} --fp8-format e5m2)
pipesched_cli_error(plan_optimizer "--optimizer: expected adam or sgd, got 'lamb'"
    plan ${plan_8b} ${plan_8b_args} --optimizer lamb)
# The search's progress goes through the tool's one reporter (tools/progress.hpp), forced here.
pipesched_cli_test(plan_search_progress ENV PIPESCHED_PROGRESS=0 ARGS plan --search --top 1 --jobs 1 --no-autoschedule
    ${plan_search_8b} ${plan_search_args}
    STDOUT "^layout search: llama on 8 x h100"
    STDERR "^(pipesched plan: [^\n]*\n)*pipesched plan: searching the layouts of llama, [0-9]+ of [0-9]+ layout steps [(]100 %[)][^\n]*, done\n$")
