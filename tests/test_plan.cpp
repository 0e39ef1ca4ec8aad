// pipesched plan: model and launch-line readers, parameter counts against published totals,
// Korthikanti's Table 2, Megatron-LM's FLOPs and theoretical memory, stage layouts by hand, and
// plan()'s ranking against the library's own replay.
#include <doctest/doctest.h>

#include <pipesched/detail/json_reader.hpp>
#include <pipesched/plan/hf_config.hpp>
#include <pipesched/plan/megatron_args.hpp>
#include <pipesched/plan/plan.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef PIPESCHED_PLAN_DATA_DIR
#error "tests/CMakeLists.txt defines PIPESCHED_PLAN_DATA_DIR"
#endif

namespace {

namespace pl = pipesched::plan;

std::string plan_data(const std::string& name) {
    std::ifstream f{std::string{PIPESCHED_PLAN_DATA_DIR} + "/" + name, std::ios::binary};
    REQUIRE(f.good());
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

pl::model_config config(const std::string& name) { return pl::read_hf_config(plan_data(name), name).model; }

std::vector<std::string_view> words(const std::string& line) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        const std::size_t j = line.find(' ', i);
        const std::size_t end = j == std::string::npos ? line.size() : j;
        if (end > i) out.emplace_back(line.data() + i, end - i);
        i = end;
    }
    return out;
}

/// A GPT layer as Korthikanti et al. count it: MHA, 4h GeLU MLP, dropout everywhere, eager
/// attention.
pl::model_config korthikanti_model() {
    pl::model_config m;
    m.hidden = 6144;
    m.heads = 48;
    m.layers = 4;
    m.ffn_hidden = 4 * 6144;
    m.vocab = 51200;
    m.gated_mlp = false;
    m.norm = pl::norm_kind::layer_norm;
    m.hidden_dropout = 0.1;
    m.attention_dropout = 0.1;
    return m;
}

} // namespace

TEST_CASE("json reader: values, positions, and what strict JSON refuses") {
    const auto r = pipesched::json::parse("{\n  \"a\": [1, -2.5e3, true, null],\n  \"b\": \"x\\u00e9\\n\"\n}");
    REQUIRE(r);
    const auto& doc = *r.document;
    REQUIRE(doc.find("a") != nullptr);
    CHECK(doc.find("a")->items.size() == 4);
    CHECK(doc.find("a")->items[1].number == -2500.0);
    CHECK(doc.find("a")->items[0].whole() == 1u);
    CHECK_FALSE(doc.find("a")->items[1].whole());
    CHECK(doc.find("b")->text == "x\xc3\xa9\n");
    CHECK(doc.find("b")->line == 3);
    CHECK(doc.find("b")->column == 8);
    const std::vector<std::pair<std::string, std::string>> bad{
        {"{\"a\":1,}", "line 1, column 8: expected a member name"},
        {"{\"a\":1,\"a\":2}", "duplicate key \"a\""},
        {"[1,]", "expected a value"},
        {"{\"a\":01}", "leading zero"},
        {"{\"a\":NaN}", "expected a value"},
        {"{\"a\":1e999}", "too large for a double"},
        {"{\"a\":\"\\ud800\"}", "unpaired surrogate"},
        {"{} x", "unexpected text after"},
        {"", "unexpected end of input"},
        {"{\"a\":\"\x01\"}", "control character"},
        {"// comment\n{}", "expected a value"},
        {std::string(100, '['), "nesting deeper than 64"},
    };
    for (const auto& item : bad) {
        const std::string& text = item.first;
        const std::string& message = item.second;
        CAPTURE(text);
        const auto e = pipesched::json::parse(text);
        REQUIRE_FALSE(e);
        CHECK(e.error.find(message) != std::string::npos);
    }
    CHECK(pipesched::json::parse("{\"a\":1e-999}").document->find("a")->number == 0.0);
}

TEST_CASE("plan: parameter counts of six published models") {
    // Llama-3-8B by hand: attention 4096 x (4096 + 2 x 1024) + 4096 x 4096 = 41,943,040, MLP
    // 3 x 4096 x 14336 = 176,160,768, norms 8192: 218,112,000 per layer, x 32, plus two
    // 128256 x 4096 embeddings and the final norm: 8,030,261,248 (the checkpoint's count).
    CHECK(pl::count_parameters(config("llama3_8b.json")).total() == 8'030'261'248.0);
    // Qwen2-7B by hand: Q, K, V biases 3584 + 2 x 512 per layer on top of the Llama shape.
    CHECK(pl::count_parameters(config("qwen2_7b.json")).total() == 7'615'616'512.0);
    struct published {
        const char* file;
        double total;  // the model's published total
        double active; // parameters a token uses, where the publisher states it (0: dense)
    };
    // Totals as their publishers state them: Meta's model cards (Llama 2 7B: 6.74B in its
    // checkpoint; Llama 3 8B 8.03B, 70B 70.6B), Mistral AI's Mixtral announcement (46.7B total,
    // 12.9B per token), Qwen2's model card (7.62B), DeepSeek-V3's report (671B total, 37B
    // activated, the MTP module's 14B counted apart).
    const std::vector<published> models{
        {"llama2_7b.json", 6.74e9, 0.0},   {"llama3_8b.json", 8.03e9, 0.0},
        {"llama3_70b.json", 70.6e9, 0.0},  {"mixtral_8x7b.json", 46.7e9, 12.9e9},
        {"qwen2_7b.json", 7.62e9, 0.0},    {"deepseek_v3.json", 671e9, 37e9},
    };
    for (const published& p : models) {
        CAPTURE(p.file);
        const pl::parameter_count c = pl::count_parameters(config(p.file));
        CHECK(std::abs(c.total() - p.total) / p.total < 0.005);
        if (p.active > 0) CHECK(std::abs(c.active - p.active) / p.active < 0.02);
        else CHECK(c.active == c.total());
    }
    // DeepSeek-V3's MTP module: about 14B with its own embedding and head, which pipesched
    // counts once (they are shared): 11.5B for the layer and its projections.
    const pl::parameter_count ds = pl::count_parameters(config("deepseek_v3.json"));
    CHECK(ds.mtp > 11e9);
    CHECK(ds.mtp < 12e9);
}

TEST_CASE("plan: config.json errors name the key and its place") {
    const std::string good = plan_data("llama3_8b.json");
    const auto error_of = [](const std::string& text) {
        try {
            (void)pl::read_hf_config(text, "c.json");
        } catch (const pl::input_error& e) {
            return std::string{e.what()};
        }
        return std::string{};
    };
    // Every config below is a Llama one unless it says otherwise: `{"model_type":"llama",` is 21
    // characters before the first key, so a value after `{"hidden_size":` is at column 37.
    const auto llama = [](const std::string& members) { return "{\"model_type\":\"llama\"," + members.substr(1); };
    CHECK(error_of("{\"model_type\":\"llama\"}") == "c.json: missing key \"hidden_size\"");
    CHECK(error_of(llama("{\"hidden_size\":-4096}")) == "c.json:1:37: \"hidden_size\" must not be negative, got -4096");
    CHECK(error_of(llama("{\"hidden_size\":4096.5}")) == "c.json:1:37: \"hidden_size\" must be a whole number, got 4096.5");
    CHECK(error_of(llama("{\"hidden_size\":0}")) == "c.json:1:37: \"hidden_size\" must be in 1..1048576, got 0");
    CHECK(error_of(llama("{\"hidden_size\":\"4096\"}")) == "c.json:1:37: \"hidden_size\" must be a whole number");
    CHECK(error_of(llama("{\"hidden_size\":99999999999999999999999}")).find("is too large") != std::string::npos);
    CHECK(error_of(llama("{\"hidden_size\":100,\"num_hidden_layers\":2,\"num_attention_heads\":3,\"vocab_size\":10,"
                         "\"intermediate_size\":8}")) ==
          "c.json: \"num_attention_heads\" 3 does not divide \"hidden_size\" 100 (and no \"head_dim\")");
    CHECK(error_of(llama("{\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":3,"
                         "\"vocab_size\":10,\"intermediate_size\":8}")) ==
          "c.json: \"num_key_value_heads\" 3 does not divide \"num_attention_heads\" 4");
    CHECK(error_of("[1]") == "c.json: expected a JSON object at the top");
    CHECK(error_of("{\"a\":1,\"a\":1}") == "c.json: line 1, column 8: duplicate key \"a\"");
    CHECK(error_of(std::string(2 << 20, ' ')).find("larger than") != std::string::npos);
    CHECK(error_of("{\"model_type\":\"mixtral\",\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                   "\"vocab_size\":10,\"intermediate_size\":8,\"num_local_experts\":8,\"num_experts_per_tok\":9}")
              .find("\"num_experts_per_tok\" must be in 1..8, got 9") != std::string::npos);
    CHECK(error_of(good).empty());
    // Each size within its bound, their product not: refused before any count loses precision.
    CHECK(error_of(llama("{\"hidden_size\":1048576,\"num_hidden_layers\":4096,\"num_attention_heads\":1,"
                         "\"vocab_size\":16777216,\"intermediate_size\":1048576}"))
              .find("sizes too large") != std::string::npos);
    // Unknown model types are refused, never counted as Llama (gpt-oss once came out as a dense
    // 3 B model): the error names the type, what plan supports, and the keys it does not know.
    const std::string small = "\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":10,"
                              "\"intermediate_size\":8";
    CHECK(error_of("{\"model_type\":\"gpt_neox\"," + small + ",\"hidden_act\":\"gelu\",\"use_parallel_residual\":true}") ==
          "c.json:1:15: \"model_type\" \"gpt_neox\" is not supported (plan counts the weights of llama, mistral, qwen2, "
          "qwen3, gemma, gemma2, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3); keys plan does not "
          "understand: use_parallel_residual");
    CHECK(error_of("{\"model_type\":\"gpt_oss\"," + small + ",\"num_local_experts\":32,\"experts_per_token\":4}")
              .find("\"gpt_oss\" is not supported") != std::string::npos);
    CHECK(error_of("{" + small + "}").find("c.json: missing key \"model_type\" (plan counts the weights of llama,") == 0);
    // A key that changes the weights in another family is refused in this one.
    CHECK(error_of(llama("{" + small + ",\"num_local_experts\":8}")) ==
          "c.json:1:144: \"num_local_experts\" changes the model's weights, and plan reads it only for mixtral, not for "
          "model_type \"llama\"");
    // A number below the smallest double is named with its key, as an underflow.
    CHECK(error_of(llama("{" + small + ",\"attention_dropout\":0." + std::string(400, '0') + "1}")) ==
          "c.json:1:144: \"attention_dropout\" underflows: 0.00000000000000000000000000000000000... is below the "
          "smallest double (about 4.9e-324)");
    CHECK(error_of(llama("{" + small + ",\"attention_dropout\":1e-400}")).find("\"attention_dropout\" underflows: 1e-400") !=
          std::string::npos);
}

TEST_CASE("plan: Gemma, Gemma-2 and Qwen3 counted as their checkpoints hold them") {
    // Gemma-2 9B by hand: Q 3584 x 16 x 256 and O the same, K and V 3584 x 8 x 256 each: 4 x
    // 14,680,064; the gated GeLU MLP 3 x 3584 x 14336 = 154,140,672; four norms 4 x 3584: 198,195,200
    // per layer, x 42, plus one tied 256000 x 3584 embedding and the final norm: 9,241,705,984,
    // the checkpoint's count (Google's model card: 9.24 B). Read as Llama (two matrices for a
    // "gelu" MLP, two norms) it came out 24% low.
    const std::string gemma2_9b =
        "{\"model_type\":\"gemma2\",\"hidden_size\":3584,\"intermediate_size\":14336,\"num_hidden_layers\":42,"
        "\"num_attention_heads\":16,\"num_key_value_heads\":8,\"head_dim\":256,\"vocab_size\":256000,"
        "\"hidden_act\":\"gelu_pytorch_tanh\",\"hidden_activation\":\"gelu_pytorch_tanh\",\"rms_norm_eps\":1e-06,"
        "\"query_pre_attn_scalar\":256,\"sliding_window\":4096,\"final_logit_softcapping\":30.0,"
        "\"attn_logit_softcapping\":50.0,\"cache_implementation\":\"hybrid\"}";
    const pl::hf_model g9 = pl::read_hf_config(gemma2_9b, "gemma2.json");
    CHECK(g9.model.tied_embeddings);
    CHECK(g9.model.gated_mlp);
    CHECK(g9.model.norms_per_layer == 4);
    CHECK(pl::count_parameters(g9.model).total() == 9'241'705'984.0);
    CHECK(g9.notes.size() == 1); // sliding windows and soft-capping are not modelled, and it says so
    struct published {
        const char* type;
        std::uint64_t hidden, ffn, layers, heads, kv, head_dim;
        double total; // the checkpoint's count
    };
    // Gemma-2 2B (2.61 B), 27B (27.2 B); Gemma 7B (8.54 B: head_dim 256 x 16 heads = 4096, not
    // hidden 3072); Qwen3-8B (8.19 B, with the per-head Q and K norms).
    const std::vector<published> models{
        {"gemma2", 2304, 9216, 26, 8, 4, 256, 2'614'341'888.0},
        {"gemma2", 4608, 36864, 46, 32, 16, 128, 27'227'128'320.0},
        {"gemma", 3072, 24576, 28, 16, 16, 256, 8'537'680'896.0},
    };
    for (const published& x : models) {
        CAPTURE(x.hidden);
        const std::string text = std::string{"{\"model_type\":\""} + x.type + "\",\"hidden_size\":" + std::to_string(x.hidden) +
                                 ",\"intermediate_size\":" + std::to_string(x.ffn) + ",\"num_hidden_layers\":" +
                                 std::to_string(x.layers) + ",\"num_attention_heads\":" + std::to_string(x.heads) +
                                 ",\"num_key_value_heads\":" + std::to_string(x.kv) + ",\"head_dim\":" +
                                 std::to_string(x.head_dim) + ",\"vocab_size\":256000}";
        CHECK(pl::count_parameters(pl::read_hf_config(text, "c.json").model).total() == x.total);
    }
    // Qwen3-8B by hand: 4096 x (4096 + 2 x 1024) + 4096 x 4096 = 41,943,040 attention, 3 x 4096 x
    // 12288 = 150,994,944 MLP, norms 2 x 4096 + 2 x 128 (Q and K per head): 192,946,432 a layer,
    // x 36, two 151936 x 4096 embeddings and the final norm: 8,190,735,360.
    const pl::hf_model q3 = pl::read_hf_config(
        "{\"model_type\":\"qwen3\",\"hidden_size\":4096,\"intermediate_size\":12288,\"num_hidden_layers\":36,"
        "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"head_dim\":128,\"vocab_size\":151936,"
        "\"tie_word_embeddings\":false}",
        "c.json");
    CHECK(pl::count_parameters(q3.model).total() == 8'190'735'360.0);
    // Gemma-2's extra norms keep their inputs: 2 x 2h bytes a token more than the same layer
    // with two norms.
    pl::model_config two = g9.model;
    two.norms_per_layer = 2;
    pl::training_config t;
    t.seq_length = 1024;
    pl::stage_content st;
    st.layers = 1;
    CHECK(pl::activation_of_stage(g9.model, t, st).activation - pl::activation_of_stage(two, t, st).activation ==
          1024.0 * 4.0 * 3584.0);
}

TEST_CASE("plan: Megatron launch lines, ignored flags and errors naming the flag") {
    const std::string line =
        "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
        "--group-query-attention --num-query-groups 8 --ffn-hidden-size 14336 --swiglu --normalization RMSNorm "
        "--untie-embeddings-and-output-weights --disable-bias-linear --vocab-size 128256 --seq-length 8192 "
        "--micro-batch-size 1 --global-batch-size 128 --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 "
        "--sequence-parallel --use-distributed-optimizer --bf16 --lr 3e-4 --train-iters 1000 --lr 1 \\ --save /ckpt";
    const pl::megatron_arguments a = pl::read_megatron_arguments(words(line));
    // Megatron pads 128256 to a multiple of 128 x TP = 512: 128512, two 256 x 4096 more rows.
    CHECK(a.padded_vocab_for_megatron == 128512);
    CHECK(pl::count_parameters(a.model).total() == 8'030'261'248.0 + 2 * 256 * 4096);
    CHECK(a.training.tensor_parallel == 4);
    CHECK(a.training.sequence_parallel);
    const std::vector<std::string> ignored{"torchrun", "--nproc_per_node", "pretrain_gpt.py", "--lr", "--train-iters",
                                           "--save"};
    CHECK(a.ignored == ignored);
    // Megatron's defaults: 4h GeLU MLP, LayerNorm, biases, dropout 0.1; SwiGLU's 8/3 h rounded down to 64.
    const pl::megatron_arguments d = pl::read_megatron_arguments(
        words("--num-layers 2 --hidden-size 1000 --num-attention-heads 8 --vocab-size 50257 --seq-length 16 "
              "--tensor-model-parallel-size 2"));
    CHECK(d.model.ffn_hidden == 4000);
    CHECK(d.model.vocab == 50432); // 50257 up to a multiple of 256
    CHECK(d.model.linear_bias);
    CHECK(d.model.hidden_dropout == 0.1);
    CHECK(pl::read_megatron_arguments(words("--num-layers 2 --hidden-size 1000 --num-attention-heads 8 "
                                            "--vocab-size 10 --seq-length 16 --swiglu"))
              .model.ffn_hidden == 2624);
    const auto error_of = [](const std::string& text) {
        try {
            (void)pl::read_megatron_arguments(words(text));
        } catch (const pl::input_error& e) {
            return std::string{e.what()};
        }
        return std::string{};
    };
    const std::string base = "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 10 --seq-length 16 ";
    CHECK(error_of(base).empty());
    CHECK(error_of(base + "--tensor-model-parallel-size x") == "--tensor-model-parallel-size: expected a whole number, got 'x'");
    CHECK(error_of(base + "--tensor-model-parallel-size 0") == "--tensor-model-parallel-size: must be in 1..1024, got 0");
    CHECK(error_of(base + "--tensor-model-parallel-size 8") ==
          "--tensor-model-parallel-size 8 does not divide --num-attention-heads 4");
    CHECK(error_of(base + "--tensor-model-parallel-size") == "--tensor-model-parallel-size: needs a value");
    CHECK(error_of(base + "--recompute-granularity some") == "--recompute-granularity: expected full or selective, got 'some'");
    CHECK(error_of(base + "--num-layers 5") == "--num-layers: given twice");
    CHECK(error_of(base + "--sequence-parallel=1") == "--sequence-parallel: takes no value");
    CHECK(error_of(base + "--num-query-groups 3 --group-query-attention") ==
          "--num-query-groups 3 does not divide --num-attention-heads 4");
    CHECK(error_of(base + "--num-experts 8 --moe-router-topk 2 --moe-layer-freq ([0]*1+[1]*2)") ==
          "--moe-layer-freq: the list has 3 entries, not --num-layers 4");
    CHECK(error_of(base + "--num-experts 8 --moe-router-topk 9") == "--moe-router-topk 9 exceeds --num-experts 8");
    CHECK(error_of(base + "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 1 "
                          "--account-for-loss-in-pipeline-split")
              .find("are exclusive") != std::string::npos);
    CHECK(error_of("--hidden-size 64").find("missing --num-layers") == 0);
    CHECK(error_of(base + "--global-batch-size 99999999999999999999999").find("too large") != std::string::npos);
    // Megatron splits each rank's layers over its virtual stages (and the key/value heads over
    // TP, which plan() checks: Megatron's theoretical memory is computed without that rule).
    CHECK(error_of(base + "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 3") ==
          "--num-virtual-stages-per-pipeline-rank 3: rank 0's 2 layers do not divide into 3 chunks");
    CHECK(error_of(base + "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2").empty());
    CHECK(error_of(base + "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 3 "
                          "--num-virtual-stages-per-pipeline-rank 2") ==
          "--num-virtual-stages-per-pipeline-rank 2: rank 0's 3 layers do not divide into 2 chunks");
    const pl::megatron_arguments moe = pl::read_megatron_arguments(
        words(base + "--num-experts 8 --moe-router-topk 2 --moe-layer-freq ([0]*1+[1]*3)"));
    CHECK(moe.model.moe_layers == std::vector<bool>{false, true, true, true});
    CHECK(pl::read_megatron_arguments(words(base + "--num-experts 8 --moe-router-topk 2 --moe-layer-freq 2"))
              .model.moe_layers == std::vector<bool>{true, false, true, false});
}

TEST_CASE("plan: Megatron-LM's theoretical memory, to the last bit, on Megatron's own grid") {
    const std::string csv = plan_data("megatron_theoretical.csv");
    std::istringstream lines{csv};
    std::string line;
    std::getline(lines, line); // header
    int rows = 0;
    while (std::getline(lines, line)) {
        if (line.empty()) continue;
        CAPTURE(line);
        std::vector<std::string> cells;
        std::size_t start = 0;
        for (std::size_t comma = line.find(','); ; comma = line.find(',', start)) {
            cells.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        REQUIRE(cells.size() == 6);
        pl::megatron_arguments a = pl::read_megatron_arguments(words(cells[0]));
        const std::uint64_t world = std::stoull(cells[1]);
        a.training.data_parallel =
            world / (a.training.tensor_parallel * a.training.pipeline_parallel * a.training.context_parallel);
        const pl::megatron_memory mem =
            pl::megatron_theoretical(a.model, a.training, std::stoull(cells[2]), a.padded_vocab_for_megatron);
        CHECK(mem.weight_and_optimizer_mb == std::strtod(cells[3].c_str(), nullptr));
        CHECK(mem.activation_mb == std::strtod(cells[4].c_str(), nullptr));
        CHECK(mem.total_mb == std::strtod(cells[5].c_str(), nullptr));
        ++rows;
    }
    CHECK(rows == 138);
}

TEST_CASE("plan: activation bytes per layer match Korthikanti et al. Table 2") {
    const pl::model_config m = korthikanti_model();
    const double s = 2048;
    const double b = 1;
    const double h = static_cast<double>(m.hidden);
    const double a = static_cast<double>(m.heads);
    const pl::stage_content one_layer{1, 0, false, false, 0};
    const auto per_sbh = [&](std::uint64_t t, bool sp, pl::recompute_kind r) {
        pl::training_config tc;
        tc.tensor_parallel = t;
        tc.sequence_parallel = sp;
        tc.recompute = r;
        tc.attention = pl::attention_kind::eager;
        tc.seq_length = 2048;
        tc.micro_batch = 1;
        return pl::activation_of_stage(m, tc, one_layer).activation / (s * b * h);
    };
    const double as_h = a * s / h;
    for (const std::uint64_t t : {1u, 2u, 8u}) {
        CAPTURE(t);
        const double td = static_cast<double>(t);
        // Table 2: tensor parallel 10 + 24/t + 5as/(ht); + sequence parallel 34/t + 5as/(ht);
        // selective recompute drops the 5as/h term; full recompute keeps the layer input, 2.
        CHECK(per_sbh(t, false, pl::recompute_kind::none) == doctest::Approx(10 + 24 / td + 5 * as_h / td));
        CHECK(per_sbh(t, true, pl::recompute_kind::none) == doctest::Approx(34 / td + 5 * as_h / td));
        CHECK(per_sbh(t, false, pl::recompute_kind::selective) == doctest::Approx(10 + 24 / td));
        CHECK(per_sbh(t, true, pl::recompute_kind::selective) == doctest::Approx(34 / td));
        CHECK(per_sbh(t, false, pl::recompute_kind::full) == doctest::Approx(2));
        CHECK(per_sbh(t, true, pl::recompute_kind::full) == doctest::Approx(2 / td));
    }
    // No dropout and FlashAttention (a Llama-style model): the masks and scores are gone.
    pl::model_config flash = m;
    flash.hidden_dropout = 0.0;
    flash.attention_dropout = 0.0;
    pl::training_config tc;
    tc.seq_length = 2048;
    // 34 less the two hidden dropout masks (h each); the attention mask went with the 5as term.
    CHECK(pl::activation_of_stage(flash, tc, one_layer).activation / (s * b * h) == doctest::Approx(32));
    // CP divides the sequence.
    tc.context_parallel = 2;
    CHECK(pl::activation_of_stage(flash, tc, one_layer).activation / (s * b * h) == doctest::Approx(16));
}

TEST_CASE("plan: forward FLOPs are a third of Megatron-LM's count") {
    // Megatron's num_floating_point_operations for a dense GQA SwiGLU model and one sample:
    // 3 x 2 x s x (h x ffn x 3 x L + L x (h x (q + k + v) + q x h) + h x V) + 3 x 2 x s^2 x q x L
    // (training.py at 1bcb3b9e0b with its causal halving and the two core GEMMs).
    const pl::model_config m = config("llama3_8b.json");
    pl::training_config t;
    t.seq_length = 4096;
    t.tensor_parallel = 2;
    t.context_parallel = 2;
    const double s = 4096;
    const double h = 4096;
    const double q = 4096;
    const double kv = 1024;
    const double megatron = 3.0 * 2.0 * s * (h * 14336 * 3 * 32 + 32 * (h * (q + 2 * kv) + q * h) + h * 128256) +
                            3.0 * 2.0 * s * s * q * 32;
    pl::stage_content all{32, 0, true, true, 0};
    const pl::stage_flops f = pl::flops_of_stage(m, t, all);
    CHECK(3.0 * (f.matrices + f.attention_core) * 2 * 2 == doctest::Approx(megatron).epsilon(1e-12));
    // The selective recompute's FLOPs are the core attention's.
    const pl::stage_content layers_only{32, 0, false, false, 0};
    t.recompute = pl::recompute_kind::selective;
    CHECK(pl::flops_of_stage(m, t, layers_only).recomputed == doctest::Approx(f.attention_core));
}

TEST_CASE("plan: seconds from each operation: W is the weight-gradient GEMMs, recompute adds what it reruns") {
    const pl::model_config m = config("llama3_8b.json");
    const pl::gpu_spec g = *pl::find_gpu("h100");
    pl::training_config t;
    t.seq_length = 4096;
    t.tensor_parallel = 2;
    const pl::time_options o{};
    // One GEMM by hand: 4096 x 6144 x 4096 (Llama-3-8B's QKV at TP 2) is aligned and fills
    // 32 x 48 = 1536 tiles of 128 x 128, 11.6 waves of 132 SMs: 1536 / (12 x 132) of the wave.
    const double flops = 2.0 * 4096 * 6144 * 4096;
    const double fill = 1536.0 / (12.0 * 132.0);
    const pl::pass_seconds qkv = pl::seconds_of(pl::operation{.name = "qkv", .m = 4096, .n = 6144, .k = 4096}, g, o);
    CHECK(qkv.forward == doctest::Approx(flops / (989.5e12 * g.gemm_efficiency * fill) + g.kernel_overhead));
    // dX (4096 x 4096 x 6144) fills 1024 tiles in 8 waves, dW (4096 x 6144 x 4096) as F.
    CHECK(qkv.backward_input == doctest::Approx(flops / (989.5e12 * g.gemm_efficiency * (1024.0 / (8.0 * 132.0))) + g.kernel_overhead));
    CHECK(qkv.backward_weight == doctest::Approx(qkv.forward));
    // An unaligned width (SwiGLU's 8h/3 = 10922 at h = 4096) runs at the measured 0.685.
    const pl::pass_seconds odd = pl::seconds_of(pl::operation{.name = "up", .m = 4096, .n = 10922, .k = 4096}, g, o);
    const pl::pass_seconds even = pl::seconds_of(pl::operation{.name = "up", .m = 4096, .n = 10944, .k = 4096}, g, o);
    CHECK(odd.forward > even.forward * 1.3);
    // A GEMM without weights (attention's scores) has no W; its two backward GEMMs are in I.
    const pl::pass_seconds scores =
        pl::seconds_of(pl::operation{.name = "s", .m = 2048, .n = 2048, .k = 128, .count = 32, .weight = false}, g, o);
    CHECK(scores.backward_weight == 0.0);
    CHECK(scores.backward_input > scores.forward);
    // A layer: W is its weight-gradient GEMMs only, so W < F < I; B = I + W.
    const pl::stage_content one{1, 0, false, false, 0};
    const pl::stage_seconds layer = pl::seconds_of_stage(m, t, one, g, o);
    CHECK(layer.backward_weight < layer.forward);
    CHECK(layer.backward_input > layer.forward);
    CHECK(layer.backward == doctest::Approx(layer.backward_input + layer.backward_weight));
    double w = 0.0;
    for (const pl::operation& op : pl::layer_operations(m, t, false, g))
        if (op.kind == pl::operation_kind::gemm && op.weight) w += pl::seconds_of(op, g, o).backward_weight;
    CHECK(layer.backward_weight == doctest::Approx(w));
    // The TP all-reduces: two in F, two in I, NVLink at 0.82 of 450 GB/s, 2(n-1)/n of 32 MiB.
    const double ar = pl::collective_seconds(pl::collective_kind::all_reduce, 2.0 * 4096 * 4096, 2, pl::link_kind::nvlink, g);
    CHECK(ar == doctest::Approx(2.0 * 0.5 * 2.0 * 4096 * 4096 / (450e9 * 0.82) + 2.0 * g.nvlink_latency));
    t.tp_comm_overlap = true; // hidden behind the layer's GEMMs
    const pl::stage_seconds hidden = pl::seconds_of_stage(m, t, one, g, o);
    CHECK(hidden.forward == doctest::Approx(layer.forward - 2 * ar));
    t.tp_comm_overlap = false;
    // Full recompute adds exactly each layer's forward to I; selective the core attention's.
    const pl::stage_content four{4, 0, false, false, 0};
    const pl::stage_seconds plain = pl::seconds_of_stage(m, t, four, g, o);
    t.recompute = pl::recompute_kind::full;
    const pl::stage_seconds full = pl::seconds_of_stage(m, t, four, g, o);
    CHECK(full.backward_input == doctest::Approx(plain.backward_input + plain.forward));
    CHECK(full.backward_weight == plain.backward_weight);
    t.recompute = pl::recompute_kind::selective;
    double core = 0.0;
    for (const pl::operation& op : pl::layer_operations(m, t, false, g))
        if (op.core_attention) core += pl::seconds_of(op, g, o).forward;
    CHECK(core > 0.0);
    CHECK(pl::seconds_of_stage(m, t, four, g, o).backward_input == doctest::Approx(plain.backward_input + 4 * core));
    // FP8 runs the GEMMs at the FP8 peak: a large GEMM twice as fast.
    const pl::time_options fp8{1.0, true};
    CHECK(pl::seconds_of(pl::operation{.name = "big", .m = 16384, .n = 16384, .k = 16384}, g, fp8).forward ==
          doctest::Approx(pl::seconds_of(pl::operation{.name = "big", .m = 16384, .n = 16384, .k = 16384}, g, o).forward / 2)
              .epsilon(1e-3));
}

TEST_CASE("plan: stage layouts by hand") {
    pl::model_config m;
    m.layers = 10;
    m.mtp_layers = 0;
    pl::training_config t;
    t.pipeline_parallel = 2;
    const auto layers = [](const std::vector<pl::stage_content>& st) {
        std::vector<std::uint64_t> out;
        for (const auto& s : st) out.push_back(s.layers);
        return out;
    };
    CHECK(layers(pl::stage_contents(m, t, 1)) == std::vector<std::uint64_t>{5, 5});
    CHECK_THROWS_WITH_AS((void)pl::stage_contents(m, t, 2), "rank 0's 5 layers do not divide into 2 chunks", pl::input_error);
    t.account_for_embedding = true;
    t.account_for_loss = true; // 12 "layers": 6 per rank, the embedding and loss take one each
    CHECK(layers(pl::stage_contents(m, t, 1)) == std::vector<std::uint64_t>{5, 5});
    const auto two = pl::stage_contents(m, t, 2); // stages 0 (r0 c0), 1 (r1 c0), 2 (r0 c1), 3 (r1 c1)
    CHECK(layers(two) == std::vector<std::uint64_t>{2, 3, 3, 2});
    CHECK(two[0].embedding);
    CHECK(two[3].loss);
    CHECK(two[2].first_layer == 5);
    t = {};
    t.pipeline_parallel = 3;
    t.first_stage_layers = 2;
    t.last_stage_layers = 4; // 10 - 2 - 4 = 4 for the middle rank
    CHECK(layers(pl::stage_contents(m, t, 1)) == std::vector<std::uint64_t>{2, 4, 4});
    t.pipeline_parallel = 4;
    t.last_stage_layers = 3;
    CHECK_THROWS_WITH_AS((void)pl::stage_contents(m, t, 1),
                         "--num-layers 10: the 5 layers left after the first/last stage do not divide over 2 ranks",
                         pl::input_error);
    t = {};
    t.pipeline_parallel = 2;
    m.layers = 8;
    m.mtp_layers = 1;
    t.layout = "Et*2|(tt|)*2,t|tm|L";
    const auto laid = pl::stage_contents(m, t, 3);
    CHECK(layers(laid) == std::vector<std::uint64_t>{2, 2, 2, 1, 1, 0});
    CHECK(laid[4].mtp == 1);
    CHECK(laid[5].loss);
    CHECK_THROWS_WITH_AS((void)pl::stage_contents(m, t, 2), "--pipeline-model-parallel-layout: 6 stages, not 4 (2 ranks x 2 chunks)",
                         pl::input_error);
    t.layout = "Et*2|(tt|)*2,t|tx|L";
    CHECK_THROWS_AS((void)pl::stage_contents(m, t, 3), pl::input_error);
    t.layout = "Et*9999999|L"; // a few bytes must not ask for megabytes
    CHECK_THROWS_WITH_AS((void)pl::stage_contents(m, t, 1), "--pipeline-model-parallel-layout: repeat count too large",
                         pl::input_error);
    t.layout = "E((tttttttttt)*1000)*1000|L";
    CHECK_THROWS_WITH_AS((void)pl::stage_contents(m, t, 1), "--pipeline-model-parallel-layout: too long once unrolled",
                         pl::input_error);
}

TEST_CASE("plan: every schedule ranked on the library's replay, the fastest that fits recommended") {
    pl::megatron_arguments a = pl::read_megatron_arguments(
        words("--num-layers 16 --hidden-size 2048 --num-attention-heads 16 --group-query-attention --num-query-groups 4 "
              "--swiglu --normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights "
              "--vocab-size 32000 --seq-length 4096 --micro-batch-size 1 --global-batch-size 16 "
              "--pipeline-model-parallel-size 4 --hidden-dropout 0 --attention-dropout 0"));
    const pl::gpu_spec g = *pl::find_gpu("h100");
    const pl::plan_result r = pl::plan(a.model, a.training, g);
    REQUIRE(r.recommended);
    CHECK(*r.recommended == 0);
    CHECK(r.microbatches == 16);
    const std::uint64_t p = 4;
    // The ranking: fitting rows first, in iteration time; the recommendation is the fastest.
    for (std::size_t k = 1; k < r.schedules.size(); ++k) {
        const auto& x = r.schedules[k - 1];
        const auto& y = r.schedules[k];
        if (x.evaluated && y.evaluated && x.fits == y.fits) {
            CHECK(x.iteration_seconds <= y.iteration_seconds * (1 + 1e-9));
            // Equally fast to rounding: the one with less memory first.
            if (y.iteration_seconds <= x.iteration_seconds * (1 + 1e-9)) CHECK(x.worst_bytes() <= y.worst_bytes());
        }
        if (y.fits) CHECK(x.fits);
    }
    bool saw_interleaved_4 = false;
    for (const pl::schedule_report& s : r.schedules) {
        CAPTURE(s.name);
        CAPTURE(s.chunks);
        if (!s.evaluated) continue;
        REQUIRE(s.peak_bytes.size() == p);
        // Peaks: the states plus the replay's activations, checked against 1F1B's and GPipe's
        // closed forms: 1F1B holds min(p - r, m) microbatches on rank r, GPipe all m.
        const pl::stage_model_costs c = pl::stage_costs_for(a.model, a.training, g, {}, s.chunks, s.layout);
        if (s.name == "1F1B" || s.name == "GPipe") {
            for (std::uint64_t rank = 0; rank < p; ++rank) {
                const double held = s.name == "GPipe" ? 16.0 : static_cast<double>(std::min<std::uint64_t>(p - rank, 16));
                CHECK(s.peak_bytes[rank] == doctest::Approx(r.ranks[rank].state_bytes +
                                                            held * c.per_stage[rank].activation_memory));
            }
        }
        for (std::uint64_t rank = 0; rank < p; ++rank) CHECK(s.peak_bytes[rank] > r.ranks[rank].state_bytes * 0.99);
        CHECK(s.iteration_seconds >= s.pipeline_seconds);
        saw_interleaved_4 |= s.name == "Interleaved1F1B" && s.chunks == 4;
    }
    CHECK(saw_interleaved_4); // 4 layers per rank: 2 and 4 chunks are legal
    // The auto-scheduler searched each placement, and its answer is never slower than a
    // catalogued schedule of that placement and chunk count that fits.
    int searched = 0;
    for (const pl::schedule_report& s : r.schedules) {
        if (!s.searched || !s.evaluated) continue;
        ++searched;
        CHECK(s.fits);
        for (const pl::schedule_report& named : r.schedules) {
            if (named.searched || !named.fits || named.layout != s.layout || named.chunks != s.chunks) continue;
            CAPTURE(named.name);
            CHECK(s.pipeline_seconds <= named.pipeline_seconds * (1 + 1e-9));
        }
    }
    CHECK(searched == 3); // one stage per rank, V, interleaved with two chunks
    // Shrink the GPU until nothing fits: exit-1 material, with the advice naming the worst rank.
    pl::gpu_spec tiny = g;
    tiny.memory_bytes = r.ranks[0].state_bytes + 8 * pl::gib + 1.0;
    const pl::plan_result none = pl::plan(a.model, a.training, tiny);
    CHECK_FALSE(none.recommended);
    CHECK(none.advice.find("nothing fits in ") == 0);
    CHECK(none.advice.find(" GiB on rank ") != std::string::npos);
    CHECK(none.advice.find("Activations dominate: turn on --recompute-granularity full") != std::string::npos);
    // Measured stage times replace the FLOPs model: twice as slow, twice the pipeline time.
    pl::plan_options o;
    for (std::uint64_t rank = 0; rank < p; ++rank) {
        const pl::stage_model_costs c = pl::stage_costs_for(a.model, a.training, g, {}, 1, pipesched::placement::loop);
        const auto& x = c.per_stage[rank];
        o.measured.push_back({2 * x.forward, 2 * x.backward, 2 * x.backward_input, 2 * x.backward_weight});
    }
    o.autoschedule = false;
    const pl::plan_result slow = pl::plan(a.model, a.training, g, o);
    for (const pl::schedule_report& s : slow.schedules) {
        if (s.name != "1F1B") continue;
        for (const pl::schedule_report& f : r.schedules)
            if (f.name == "1F1B") // the p2p time is not measured, so it stays
                CHECK(s.pipeline_seconds == doctest::Approx(2 * f.pipeline_seconds).epsilon(1e-3));
    }
}

TEST_CASE("plan: a V placement puts the embedding and the loss on rank 0") {
    pl::megatron_arguments a = pl::read_megatron_arguments(
        words("--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --vocab-size 32000 --seq-length 1024 "
              "--global-batch-size 8 --pipeline-model-parallel-size 2 --untie-embeddings-and-output-weights"));
    const pl::gpu_spec g = *pl::find_gpu("h100");
    const pl::stage_model_costs v = pl::stage_costs_for(a.model, a.training, g, {}, 2, pipesched::placement::v_shape);
    const pl::stage_model_costs loop = pl::stage_costs_for(a.model, a.training, g, {}, 2, pipesched::placement::loop);
    // Same stages in model order either way; the loss stage (3) costs more than a middle one.
    REQUIRE(v.per_stage.size() == 4);
    for (std::size_t s = 0; s < 4; ++s) CHECK(v.per_stage[s].backward_weight == loop.per_stage[s].backward_weight);
    // A stage waits for its send to a neighbour on another rank: in the V, stage 1 hands its
    // activation to stage 2 on its own rank, so its F is shorter by exactly one transfer.
    const double transfer = pl::p2p_transfer_seconds(a.model, a.training, g);
    CHECK(transfer > 0.0);
    CHECK(loop.per_stage[1].forward - v.per_stage[1].forward == doctest::Approx(transfer));
    CHECK(loop.per_stage[0].forward == v.per_stage[0].forward);
    CHECK(v.per_stage[3].forward > v.per_stage[1].forward);
    CHECK(v.per_stage[3].activation_memory > v.per_stage[1].activation_memory);
    CHECK(pipesched::locate_stage(pipesched::placement::v_shape, 2, 3).rank == 0);
    CHECK(pipesched::locate_stage(pipesched::placement::loop, 2, 3).rank == 1);
}

TEST_CASE("plan: every row evaluates the per-rank split the table shows") {
    // 32 layers at PP 4 with all 32 on rank 0: a V placement once split the layers as if by
    // stage and put half of them on rank 3, reporting 72 GiB against the table's 119 GiB.
    pl::megatron_arguments a = pl::read_megatron_arguments(
        words("--num-layers 32 --hidden-size 1024 --num-attention-heads 8 --vocab-size 32000 --seq-length 1024 "
              "--global-batch-size 8 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 32"));
    const auto layers_per_rank = [](const std::vector<pl::stage_content>& st, pipesched::placement layout) {
        std::vector<std::uint64_t> out(4, 0);
        for (std::uint32_t s = 0; s < st.size(); ++s) out[pipesched::locate_stage(layout, 4, s).rank] += st[s].layers;
        return out;
    };
    const std::vector<std::uint64_t> table{32, 0, 0, 0};
    CHECK(layers_per_rank(pl::stage_contents(a.model, a.training, 2, pipesched::placement::v_shape),
                          pipesched::placement::v_shape) == table);
    CHECK(layers_per_rank(pl::stage_contents(a.model, a.training, 4), pipesched::placement::loop) == table);
    const pl::plan_result r = pl::plan(a.model, a.training, *pl::find_gpu("h100"));
    REQUIRE(r.ranks.size() == 4);
    CHECK(r.ranks[0].layers == 32);
    int v_rows = 0;
    for (const pl::schedule_report& s : r.schedules) {
        if (!s.evaluated) continue;
        CAPTURE(s.name);
        v_rows += s.layout == pipesched::placement::v_shape ? 1 : 0;
        // Rank 0 holds its 32 layers' states in every row (a V adds the output layer there).
        CHECK(s.peak_bytes[0] > r.ranks[0].state_bytes);
    }
    CHECK(v_rows >= 4);
    // The embedding counted as a layer takes one from rank 0 and the loss one from rank 3; a V
    // would take both from rank 0, so its rows are not evaluated, and say why.
    pl::megatron_arguments e = pl::read_megatron_arguments(
        words("--num-layers 14 --hidden-size 1024 --num-attention-heads 8 --vocab-size 32000 --seq-length 1024 "
              "--global-batch-size 8 --pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split "
              "--account-for-loss-in-pipeline-split"));
    const pl::plan_result re = pl::plan(e.model, e.training, *pl::find_gpu("h100"));
    for (const pl::schedule_report& s : re.schedules) {
        CAPTURE(s.name);
        if (s.layout == pipesched::placement::v_shape) {
            CHECK_FALSE(s.evaluated);
            CHECK(s.note.find("other layers than the per-rank split") != std::string::npos);
        }
    }
}

TEST_CASE("plan: one pipeline rank runs one chunk, as Megatron does") {
    pl::megatron_arguments a = pl::read_megatron_arguments(
        words("--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --vocab-size 32000 --seq-length 1024 "
              "--global-batch-size 8"));
    const pl::plan_result r = pl::plan(a.model, a.training, *pl::find_gpu("h100"));
    REQUIRE(r.recommended);
    CHECK(r.schedules[*r.recommended].chunks == 1);
    int refused = 0;
    for (const pl::schedule_report& s : r.schedules) {
        CAPTURE(s.name);
        if (s.chunks > 1) {
            CHECK_FALSE(s.evaluated);
            ++refused;
        }
    }
    // Each multi-chunk schedule once, with its note (DualPipe's two model copies are not planned).
    CHECK(refused == std::count_if(pipesched::schedules.begin(), pipesched::schedules.end(), [](const pipesched::schedule_info& i) {
              return i.multi_chunk && i.layout != pipesched::placement::bidirectional;
          }));
    // The same schedules the launch line refuses as virtual stages without pipelining.
    CHECK_THROWS_WITH_AS((void)pl::read_megatron_arguments(
                             words("--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --vocab-size 32000 "
                                   "--seq-length 1024 --num-virtual-stages-per-pipeline-rank 2")),
                         "virtual pipeline stages need --pipeline-model-parallel-size > 1", pl::input_error);
    // 1F1B and GPipe tie at p = 1; the one with less memory is recommended.
    const pl::schedule_report& best = r.schedules[*r.recommended];
    for (const pl::schedule_report& s : r.schedules)
        if (s.evaluated && s.fits && s.iteration_seconds <= best.iteration_seconds * (1 + 1e-9))
            CHECK(best.worst_bytes() <= s.worst_bytes());
}

TEST_CASE("plan: wrong options are input errors naming the field, not \"nothing fits\"") {
    pl::megatron_arguments a = pl::read_megatron_arguments(
        words("--num-layers 8 --hidden-size 1024 --num-attention-heads 8 --vocab-size 32000 --seq-length 1024 "
              "--global-batch-size 8 --pipeline-model-parallel-size 4"));
    const pl::gpu_spec h100 = *pl::find_gpu("h100");
    const auto field_of = [&](const pl::gpu_spec& g, const pl::plan_options& o) {
        try {
            (void)pl::plan(a.model, a.training, g, o);
        } catch (const pl::input_error& e) {
            CHECK(std::string{e.what()} == e.field + ": " + e.detail);
            return e.field;
        }
        return std::string{};
    };
    pl::plan_options o;
    o.autoschedule = false;
    CHECK(field_of(h100, o).empty());
    pl::gpu_spec small = h100;
    small.memory_bytes = o.memory_reserve_bytes; // nothing left for the model
    CHECK(field_of(small, o) == "gpu_spec.memory_bytes");
    pl::plan_options denormal = o;
    denormal.efficiency = 1e-310;
    CHECK(field_of(h100, denormal) == "plan_options.efficiency");
    pl::plan_options three = o;
    three.measured.assign(3, pl::stage_seconds{1, 2, 1, 1}); // 4 ranks
    CHECK(field_of(h100, three) == "plan_options.measured");
    pl::plan_options eight = o;
    eight.measured.assign(8, pl::stage_seconds{1, 2, 1, 1}); // 4 ranks x 2 chunks: fine
    CHECK(field_of(h100, eight).empty());
    pl::plan_options huge = o;
    huge.measured.assign(4, pl::stage_seconds{1, 2, 1, 1});
    huge.measured[2].forward = 1e308; // x 8 microbatches
    CHECK(field_of(h100, huge) == "plan_options.measured");
    pipesched::plan::training_config tp = a.training; // 8 heads, 8 key/value heads
    tp.tensor_parallel = 8;
    CHECK(field_of(h100, o).empty());
    pl::model_config gqa = a.model;
    gqa.kv_heads = 2;
    try {
        (void)pl::plan(gqa, tp, h100, o);
        FAIL("accepted TP 8 over 2 key/value heads");
    } catch (const pl::input_error& e) {
        CHECK(e.field == "training_config.tensor_parallel");
        CHECK(e.detail == "8 does not divide model_config.kv_heads 2 (the key/value heads, which tensor parallelism splits)");
    }
    pipesched::plan::training_config batch = a.training;
    batch.global_batch = 7;
    batch.micro_batch = 2;
    try {
        (void)pl::plan(a.model, batch, h100, o);
        FAIL("accepted a global batch that is not a multiple of the micro-batch");
    } catch (const pl::input_error& e) {
        CHECK(e.field == "training_config.global_batch");
        CHECK(e.detail == "7 is not a multiple of micro_batch x data_parallel = 2 (or set training_config.microbatches)");
    }
}

TEST_CASE("json reader: numbers below the smallest double are marked, never called too large") {
    const auto small = pipesched::json::parse("{\"a\":0." + std::string(400, '0') + "1,\"b\":1e-400,\"c\":-2.5E-999,"
                                              "\"d\":0.0e-999,\"e\":1e-310}");
    REQUIRE(small);
    for (const char* key : {"a", "b", "c"}) {
        CAPTURE(key);
        CHECK(small.document->find(key)->underflow);
        CHECK(small.document->find(key)->number == 0.0);
    }
    CHECK_FALSE(small.document->find("d")->underflow); // zero is zero
    CHECK_FALSE(small.document->find("e")->underflow); // a denormal is a double
    CHECK(small.document->find("e")->number > 0.0);
    for (const std::string& big : std::vector<std::string>{"1e400", "123" + std::string(400, '0'), "0.001e999"}) {
        CAPTURE(big);
        const auto r = pipesched::json::parse("{\"a\":" + big + "}");
        REQUIRE_FALSE(r);
        CHECK(r.error.find("too large for a double") != std::string::npos);
    }
}
