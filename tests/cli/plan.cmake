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
pipesched_cli_error(plan_efficiency_range "--efficiency must be above 0 and at most 1"
    plan ${plan_8b} --efficiency 1.5 ${plan_8b_args})
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
# The cluster's links: new flags, the h800 preset, and bad values naming the flag.
pipesched_cli_test(plan_h800_links ARGS plan ${plan_8b} --gpu h800 --gpus-per-node 4 --nvlink-gbytes 200
    --nic-gbits 100 ${plan_8b_args} --fp8-format hybrid --optimizer sgd --grad-reduce-in-bf16 --tp-comm-overlap
    STDOUT "^model llama: [^\n]*\ngpu h800: 989\\.5 TFLOP/s, [^\n]*\n.*recommended: ")
pipesched_cli_error(plan_nvlink_zero "--nvlink-gbytes must be above 0" plan ${plan_8b} --nvlink-gbytes 0 ${plan_8b_args})
pipesched_cli_error(plan_nic_negative "--nic-gbits needs a finite number >= 0, got .-400." plan ${plan_8b} --nic-gbits -400 ${plan_8b_args})
pipesched_cli_error(plan_gpus_per_node_divides "--gpus-per-node 3 does not divide the 8 GPUs"
    plan ${plan_8b} --gpus-per-node 3 ${plan_8b_args})
pipesched_cli_error(plan_gpus_per_node_zero "--gpus-per-node" plan ${plan_8b} --gpus-per-node 0 ${plan_8b_args})
pipesched_cli_error(plan_fp8_format "--fp8-format: expected hybrid or e4m3, got 'e5m2'"
    plan ${plan_8b} ${plan_8b_args} --fp8-format e5m2)
pipesched_cli_error(plan_optimizer "--optimizer: expected adam or sgd, got 'lamb'"
    plan ${plan_8b} ${plan_8b_args} --optimizer lamb)
