/* zoo/models/qacgbert.c — QACGBertForSequenceClassification (SPEC §6.4): CGBERT
 * with quasi-attention. Wu & Ong 2021, section "Context-Guided
 * Quasi-Attention":
 *
 *   Â        = A_self + λ_A ⊙ A_quasi
 *   [C_Q; C_K] = C [Z_Q; Z_K]                               Z_Q = Wcq, Z_K = Wck
 *   A_quasi  = α · σ( C_Q C_Kᵀ / √d )                       in (0, 1)
 *   [λQ; λK] = σ( [Q; K] [V_Q; V_K] + [C_Q; C_K] [V_Q^C; V_K^C] )
 *   λ_A      = 1 − (β λQ + γ λK)                            in (−1, 1)
 *
 * As the original code: α = β = γ = 1 (config quasi_scale, lambda_q_scale,
 * lambda_k_scale), the −10000 mask added before the quasi sigmoid (so padded
 * keys get A_quasi = 0), λ per head and query row, the gates with biases.
 * Rows of Â need not sum to 1 and may be negative. The original's last
 * revision also drops out C_Q and C_K in training (with the attention's
 * dropout): config context_dropout_prob, 0 (none) by default as the seed.
 * Embeddings, deep context, layers, pooler and loss: zoo/models/cgbert.c and the
 * BERT encoder of zoo/models/bert.c. */
#include "zoo/models/cgbert_internal.h"

static void *qacgbert_attention_init(Registry *r, const BertConfig *cfg)
{
    CgSelfAttention *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    int64_t H = cfg->hidden_size, d = H / cfg->num_attention_heads;
    m->heads = cfg->num_attention_heads;
    bertc_linear_init(&m->Wq, r, "Wq", H, H, true);
    bertc_linear_init(&m->Wk, r, "Wk", H, H, true);
    bertc_linear_init(&m->Wv, r, "Wv", H, H, true);
    bertc_linear_init(&m->Wcq, r, "Wcq", H, H, true);     /* applied to D before the head split */
    bertc_linear_init(&m->Wck, r, "Wck", H, H, true);
    bertc_linear_init(&m->lambda_Qc, r, "lambda_Qc", d, 1, true);
    bertc_linear_init(&m->lambda_Q, r, "lambda_Q", d, 1, true);
    bertc_linear_init(&m->lambda_Kc, r, "lambda_Kc", d, 1, true);
    bertc_linear_init(&m->lambda_K, r, "lambda_K", d, 1, true);
    bertc_cg_lambda_init(r, cfg, m);
    CgKeys keys = bertc_cg_keys_of(cfg);
    m->context_dropout.p = keys.context_dropout_prob;    /* the original reuses `dropout` */
    m->alpha = keys.quasi_scale;
    m->beta = keys.lambda_q_scale;
    m->gamma = keys.lambda_k_scale;
    bertc_dropout_init(&m->dropout, r, "dropout", cfg->attention_probs_dropout_prob);
    bertc_nn_leaf(r, "lambda_act", "Sigmoid()");
    bertc_nn_leaf(r, "quasi_act", "Sigmoid()");
    return m;
}

/* λ = σ(Linear(c; V^C) + Linear(x; V)): (B, nh, S, 1). */
static Var *gate(Graph *g, const Linear *v_context, const Linear *v_x, Var *c, Var *x)
{
    return bertc_ag_sigmoid(g, bertc_ag_add(g, bertc_linear_forward(g, v_context, c), bertc_linear_forward(g, v_x, x)));
}

/* x ⊙ s for a scalar s, or x itself when s = 1 (the default adds no op). */
static Var *scaled(Graph *g, Var *x, float s)
{
    return s == 1.0f ? x : bertc_ag_scale(g, x, s);
}

/* x (B, S, H), D (B, S, H) the layer's deep context, mask (B, 1, 1, S). */
static Var *qacgbert_attention_forward(Graph *g, const void *self, Var *x, Var *D, Var *mask,
                                       Var **maps)
{
    const CgSelfAttention *m = self;
    Var *Q = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->Wq, x), m->heads);   /* (B, nh, S, d) */
    Var *K = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->Wk, x), m->heads);
    Var *V = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->Wv, x), m->heads);
    Var *A = bertc_ag_softmax(g, bertc_cg_scores(g, Q, K, mask));                     /* (B, nh, S, S) */
    Var *Cq = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->Wcq, D), m->heads);
    Var *Ck = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->Wck, D), m->heads);
    Cq = bertc_dropout_forward(g, &m->context_dropout, Cq);            /* identity in eval */
    Ck = bertc_dropout_forward(g, &m->context_dropout, Ck);
    Var *quasi = scaled(g, bertc_ag_sigmoid(g, bertc_cg_scores(g, Cq, Ck, mask)), m->alpha);  /* A_quasi */
    Var *lambda_q = gate(g, &m->lambda_Qc, &m->lambda_Q, Cq, Q);
    Var *lambda_k = gate(g, &m->lambda_Kc, &m->lambda_K, Ck, K);          /* key row i */
    Var *lambda_A = bertc_cg_one_minus(g, bertc_ag_add(g, scaled(g, lambda_q, m->beta),
                                                       scaled(g, lambda_k, m->gamma)));   /* λ_A */
    Var *quasi_A = bertc_ag_mul(g, lambda_A, quasi);
    Var *A_hat = bertc_ag_add(g, A, quasi_A);                                   /* Â */
    maps[CG_ATTENTION_PROBS] = A;
    maps[CG_LAMBDA_Q] = lambda_q;
    maps[CG_LAMBDA_K] = lambda_k;
    maps[CG_DEEP_CONTEXT] = D;
    maps[CG_CONTEXT_Q] = Cq;
    maps[CG_CONTEXT_K] = Ck;
    maps[QA_LAMBDA_CONTEXT] = lambda_A;
    maps[QA_QUASI_ATTENTION_SCORES] = quasi;
    maps[QA_QUASI_ATTENTION_PROB] = quasi_A;
    maps[QA_NEW_ATTENTION_PROBS] = A_hat;
    Var *probs = bertc_dropout_forward(g, &m->dropout, A_hat);
    return bertc_nn_merge_heads(g, bertc_ag_matmul(g, probs, V, false, false));      /* (B, S, H) */
}

/* The shared maps first, as in cgbert.c's table (cgbert_internal.h). */
static const BertMap qacgbert_maps[QA_MAPS] = {
    [CG_ATTENTION_PROBS] = {.name = "attention_probs", .shape = BERT_MAP_SCORES},
    [CG_LAMBDA_Q] = {.name = "lambda_q", .shape = BERT_MAP_ROWS},
    [CG_LAMBDA_K] = {.name = "lambda_k", .shape = BERT_MAP_ROWS},
    [CG_DEEP_CONTEXT] = {.name = "deep_context", .shape = BERT_MAP_HIDDEN},
    [CG_CONTEXT_Q] = {.name = "context_q", .shape = BERT_MAP_HEADS},
    [CG_CONTEXT_K] = {.name = "context_k", .shape = BERT_MAP_HEADS},
    [QA_LAMBDA_CONTEXT] = {.name = "lambda_context", .shape = BERT_MAP_ROWS},
    [QA_QUASI_ATTENTION_SCORES] = {.name = "quasi_attention_scores", .shape = BERT_MAP_SCORES},
    [QA_QUASI_ATTENTION_PROB] = {.name = "quasi_attention_prob", .shape = BERT_MAP_SCORES},
    [QA_NEW_ATTENTION_PROBS] = {.name = "new_attention_probs", .shape = BERT_MAP_SCORES},
};

static const BertAttentionHook qacgbert_attention = {
    .init = qacgbert_attention_init,
    .forward = qacgbert_attention_forward,
    .maps = qacgbert_maps,
    .n_maps = QA_MAPS,
};

static void *qacgbert_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    return bertc_cg_build(r, cfg, &qacgbert_attention, err);
}

/* The shared outputs (bertc_cg_outputs) and the quasi-attention's. */
static const OutputSpec qacgbert_outputs[] = {
    {"layers.{l}.lambda_context", "(B, nh, S, 1)"},
    {"layers.{l}.quasi_attention_scores", "(B, nh, S, S)"},
    {"layers.{l}.quasi_attention_prob", "(B, nh, S, S)"},
    {"layers.{l}.new_attention_probs", "(B, nh, S, S)"},
};

static const ExplainStep qacgbert_encoder_steps[] = {
    BERT_STEP_EMBEDDINGS,
    CG_STEP_DEEP_CONTEXT,
    {.title = "Context gate on the queries &lambda;<sub>Q</sub>",
     .equation = "&lambda;<sub>Q</sub> = &sigma;(Q V<sub>Q</sub> + C U<sub>Q</sub> "
                 "V<sub>Q</sub><sup>C</sup>)  &nbsp; (B, nh, S, 1): one gate per head and token",
     .where = "zoo/models/qacgbert.c:gate", .output = "layers.{l}.lambda_q"},
    {.title = "Context gate on the keys &lambda;<sub>K</sub>",
     .equation = "&lambda;<sub>K</sub> = &sigma;(K V<sub>K</sub> + C U<sub>K</sub> "
                 "V<sub>K</sub><sup>C</sup>)  &nbsp; (B, nh, S, 1)",
     .where = "zoo/models/qacgbert.c:gate", .output = "layers.{l}.lambda_k"},
    {.title = "Context queries C U<sub>Q</sub> (the context as each head sees it)",
     .equation = "C<sub>Q</sub> = D<sub>l</sub> U<sub>Q</sub>  &nbsp; (B, nh, S, d)",
     .where = "zoo/models/qacgbert.c:qacgbert_attention_forward", .output = "layers.{l}.context_q"},
    {.title = "Context keys C U<sub>K</sub>",
     .equation = "C<sub>K</sub> = D<sub>l</sub> U<sub>K</sub>  &nbsp; (B, nh, S, d)",
     .where = "zoo/models/qacgbert.c:qacgbert_attention_forward", .output = "layers.{l}.context_k"},
    {.title = "Self-attention A<sub>self</sub>",
     .equation = "A<sub>self</sub> = softmax(Q K<sup>T</sup> / &radic;d + M): BERT's, the context "
                 "enters through the quasi-attention  &nbsp; (B, nh, S, S)",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.attention_probs"},
    {.title = "Quasi-attention scores (before the gate)",
     .equation = "A<sub>quasi</sub> = &alpha; &sigma;(C<sub>Q</sub> C<sub>K</sub><sup>T</sup> / &radic;d)"
                 "  &isin; (0, 1)",
     .where = "zoo/models/qacgbert.c:qacgbert_attention_forward", .output = "layers.{l}.quasi_attention_scores"},
    {.title = "Quasi-attention gate &lambda;<sub>A</sub>",
     .equation = "&lambda;<sub>A</sub> = 1 &minus; (&beta; &lambda;<sub>Q</sub> + &gamma; "
                 "&lambda;<sub>K</sub>)  &isin; (&minus;1, 1)  &nbsp; (B, nh, S, 1)",
     .where = "zoo/models/qacgbert.c:qacgbert_attention_forward",
     .output = "layers.{l}.lambda_context"},
    {.title = "Quasi-attention &lambda;<sub>A</sub> &odot; A<sub>quasi</sub> (signed: context "
              "can take attention away)",
     .equation = "&lambda;<sub>A</sub> &odot; A<sub>quasi</sub>  &isin; (&minus;1, 1)  &nbsp; "
                 "(B, nh, S, S)",
     .where = "zoo/models/qacgbert.c:qacgbert_attention_forward",
     .output = "layers.{l}.quasi_attention_prob"},
    {.title = "Combined attention &Acirc;",
     .equation = "&Acirc; = A<sub>self</sub> + &lambda;<sub>A</sub> &odot; A<sub>quasi</sub>: rows "
                 "need not sum to 1 and may go below 0",
     .where = "zoo/models/qacgbert.c:qacgbert_attention_forward",
     .output = "layers.{l}.new_attention_probs"},
    BERT_STEP_LAYER_OUTPUT,
};

static const ModelExplain qacgbert_explain = {
    .mechanism = "Quasi-attention (Wu &amp; Ong 2021): a second attention from the context, "
                 "scaled by &lambda;<sub>A</sub> in (&minus;1, 1), is added to softmax "
                 "attention, so context can take attention away: the quasi-attention is drawn "
                 "on a diverging palette, blue below 0 and red above.",
    EXPLAIN_ENCODER(qacgbert_encoder_steps), EXPLAIN_STEPS(bertc_cg_head_steps),
    .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}},
};

const ModelArch bertc_arch_qacgbert = {
    .name = "QACGBertForSequenceClassification",
    .summary = "CGBERT with context-guided quasi-attention (Wu & Ong 2021)",
    .keys = bertc_cg_keys,
    .n_keys = CG_N_KEYS + QA_N_KEYS,
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = bertc_cg_inputs,
    .n_inputs = CG_N_INPUTS,
    .shared_outputs = bertc_cg_outputs,
    .n_shared_outputs = CG_N_OUTPUTS,
    .outputs = qacgbert_outputs,
    .n_outputs = sizeof qacgbert_outputs / sizeof qacgbert_outputs[0],
    .loss = "cross-entropy of logits against labels",
    .build = qacgbert_build,
    .forward = bertc_cg_forward,
    .rename = bertc_cg_rename,
    .random_batch = bertc_cg_random_batch,
    .batch_from_text = bertc_cg_batch_from_text,
    .task = MODEL_TASK_SEQ_CLS,
    .explain = &qacgbert_explain,
};
