/* cli/explain_steps.c — what `bertc explain` walks through for each
 * architecture: the steps of its forward in order (title, equation, the
 * bertc file:function that computes it, the output that holds the result)
 * and how its prediction is read. Adding a model is one entry in `table`.
 *
 * The equations are HTML with Unicode maths (no MathJax: the page is one
 * file with nothing to fetch). Shapes use the SPEC's letters: B batch,
 * S tokens, H hidden size, nh heads, d = H / nh, N sentences, V vocabulary. */
#include "cli/explain.h"

#include <string.h>

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- the encoders ------------------------------------------------------- */

#define EMBEDDINGS                                                                         \
    {.title = "Embeddings",                                                                \
     .equation = "X<sub>0</sub> = LayerNorm(E<sub>word</sub>[ids] + E<sub>type</sub>[types] " \
                 "+ E<sub>pos</sub>[0..S&minus;1])  &nbsp; (B, S, H)",                     \
     .where = "zoo/models/bert.c:bertc_bert_embeddings_forward", .output = "hidden_states.0"}

#define LAYER_OUTPUT                                                                       \
    {.title = "Add &amp; norm, feed-forward, add &amp; norm",                              \
     .equation = "Y = LN(X<sub>l</sub> + Attn W<sub>O</sub>); &nbsp; X<sub>l+1</sub> = "     \
                 "LN(Y + GELU(Y W<sub>1</sub>) W<sub>2</sub>)  &nbsp; (B, S, H)",          \
     .where = "zoo/models/bert.c:bertc_bert_layer_forward", .output = "hidden_states.{i}"}

static const ExplainStep bert_encoder[] = {
    EMBEDDINGS,
    {.title = "Self-attention",
     .equation = "A = softmax(Q K<sup>T</sup> / &radic;d + M), &nbsp; Q = X<sub>l</sub>W<sub>Q</sub>, "
                 "K = X<sub>l</sub>W<sub>K</sub>; &nbsp; Attn = A V  &nbsp; (B, nh, S, S)",
     .where = "zoo/models/bert_attention.c:bertc_bert_self_attention_forward",
     .output = "layers.{l}.attention_probs"},
    LAYER_OUTPUT,
};

/* CGBERT and QACGBERT: the context C enters every layer's attention, as
 * gates on the queries and keys (both) and as a quasi-attention (QACGBERT). */
#define DEEP_CONTEXT                                                                        \
    {.title = "Deep context",                                                               \
     .equation = "D<sub>l</sub> = [C<sub>0</sub>; X<sub>l</sub>] W<sub>D</sub> + C<sub>0</sub>"\
                 "  &nbsp; (B, S, H)",                                                      \
     .where = "zoo/models/cgbert.c:deep_context", .output = "layers.{l}.deep_context"}

static const ExplainStep cg_encoder[] = {
    EMBEDDINGS,
    DEEP_CONTEXT,
    {.title = "Context gate on the queries &lambda;<sub>Q</sub>",
     .equation = "&lambda;<sub>Q</sub> = &sigma;(Q V<sub>Q</sub> + C U<sub>Q</sub> "
                 "V<sub>Q</sub><sup>C</sup>)  &nbsp; (B, nh, S, 1): one gate per head and token",
     .where = "zoo/models/cgbert.c:context_gate", .output = "layers.{l}.lambda_q"},
    {.title = "Context gate on the keys &lambda;<sub>K</sub>",
     .equation = "&lambda;<sub>K</sub> = &sigma;(K V<sub>K</sub> + C U<sub>K</sub> "
                 "V<sub>K</sub><sup>C</sup>)  &nbsp; (B, nh, S, 1)",
     .where = "zoo/models/cgbert.c:context_gate", .output = "layers.{l}.lambda_k"},
    {.title = "Context queries C U<sub>Q</sub> (the context as each head sees it)",
     .equation = "C<sub>Q</sub> = D<sub>l</sub> U<sub>Q</sub>  &nbsp; (B, nh, S, d)",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.context_q"},
    {.title = "Context keys C U<sub>K</sub>",
     .equation = "C<sub>K</sub> = D<sub>l</sub> U<sub>K</sub>  &nbsp; (B, nh, S, d)",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.context_k"},
    {.title = "Context-guided queries Q&#770;",
     .equation = "Q&#770; = (1 &minus; &lambda;<sub>Q</sub>) &odot; Q + &lambda;<sub>Q</sub> "
                 "&odot; C U<sub>Q</sub>",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.q_hat"},
    {.title = "Context-guided keys K&#770;",
     .equation = "K&#770; = (1 &minus; &lambda;<sub>K</sub>) &odot; K + &lambda;<sub>K</sub> "
                 "&odot; C U<sub>K</sub>",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.k_hat"},
    {.title = "Attention",
     .equation = "A = softmax(Q&#770; K&#770;<sup>T</sup> / &radic;d + M)  &nbsp; (B, nh, S, S)",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.attention_probs"},
    LAYER_OUTPUT,
};

static const ExplainStep qacg_encoder[] = {
    EMBEDDINGS,
    DEEP_CONTEXT,
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
    LAYER_OUTPUT,
};

/* ---- the architectures' own steps ---------------------------------------- */

#define POOLER                                                                             \
    {.title = "Pooler",                                                                    \
     .equation = "p = tanh(X<sub>L</sub>[:, 0] W<sub>P</sub> + b<sub>P</sub>)  &nbsp; (B, H)", \
     .where = "zoo/models/bert.c:pooler_forward", .output = "pooler_output"}

static const ExplainStep pooler[] = {POOLER};

static const ExplainStep classifier[] = {
    POOLER,
    {.title = "Classifier",
     .equation = "z = p W<sub>C</sub> + b<sub>C</sub>  &nbsp; (B, num_labels)",
     .where = "zoo/models/bert_heads.c:seqcls_run", .output = "logits"},
};

static const ExplainStep mlm[] = {
    {.title = "Masked-LM head (tied to the word embeddings)",
     .equation = "z = LN(GELU(X<sub>L</sub> W<sub>T</sub>)) E<sub>word</sub><sup>T</sup> + b  "
                 "&nbsp; (B, S, V)",
     .where = "zoo/models/bert_heads.c:bertc_bert_lm_head_forward", .output = "logits"},
};

static const ExplainStep cg_head[] = {
    {.title = "Pooler token weights (attention-gate pooler)",
     .equation = "a = softmax<sub>t</sub>(gate(X<sub>L</sub>)), &nbsp; h = &Sigma;<sub>t</sub> "
                 "a<sub>t</sub> X<sub>L</sub>[t]  &nbsp; (B, S)",
     .where = "zoo/models/cgbert.c:attention_gate_pool", .output = "pooler_weights"},
    {.title = "Pooled output",
     .equation = "p = tanh(h W<sub>P</sub> + b<sub>P</sub>)  &nbsp; (B, H)",
     .where = "zoo/models/cgbert.c:pool", .output = "pooled_output"},
    {.title = "Classifier",
     .equation = "z = p W<sub>C</sub> + b<sub>C</sub>  &nbsp; (B, num_labels)",
     .where = "zoo/models/cgbert.c:bertc_cg_forward", .output = "logits"},
};

static const ExplainStep bertsum[] = {
    {.title = "Sentence vectors at each [CLS]",
     .equation = "T<sub>n</sub> = top_vec[clss<sub>n</sub>] &middot; mask_cls<sub>n</sub>  "
                 "&nbsp; (B, N, H)",
     .where = "zoo/models/summarizer.c:gather_sentences", .output = "sents_vec"},
    {.title = "Inter-sentence input h<sup>0</sup>",
     .equation = "h<sup>0</sup> = T + PE[n]  &nbsp; (B, N, H)",
     .where = "zoo/models/summarizer.c:inter_encoder_forward", .output = "inter_hidden_states.0"},
    {.title = "Inter-sentence attention",
     .equation = "A = softmax(Q K<sup>T</sup> / &radic;d<sub>k</sub>), sentences attend to "
                 "sentences  &nbsp; (B, heads, N, N)",
     .where = "zoo/models/summarizer.c:inter_layer_forward", .output = "inter.{k}.attention_probs"},
    {.title = "Inter-sentence layer output",
     .equation = "h&#771;<sup>l</sup> = h<sup>l&minus;1</sup> + MHAtt(LN(h<sup>l&minus;1</sup>)); "
                 "&nbsp; h<sup>l</sup> = h&#771;<sup>l</sup> + FFN(LN(h&#771;<sup>l</sup>))",
     .where = "zoo/models/summarizer.c:inter_layer_forward", .output = "inter_hidden_states.{k+1}"},
    {.title = "Sentence scores",
     .equation = "&Ycirc;<sub>n</sub> = &sigma;(LN(h<sup>L</sup><sub>n</sub>) W<sub>o</sub> + "
                 "b<sub>o</sub>) &middot; mask_cls<sub>n</sub>  &nbsp; (B, N)",
     .where = "zoo/models/summarizer.c:inter_encoder_forward", .output = "sent_scores"},
};

static const ExplainStep qaconv[] = {
    {.title = "Query vector from the question tokens",
     .equation = "q = relu(seq &middot; [tt = 0])[:, :Q]; &nbsp; qv = flatten(q) W<sub>query</sub>"
                 "  &nbsp; (B, H)",
     .where = "zoo/models/qaconv.c:query_vector", .output = "query_vector"},
    {.title = "Query attention over the context",
     .equation = "attention_rate = softmax<sub>t</sub>(k<sub>t</sub>&middot;qv / &radic;H / T)"
                 "  &nbsp; (B, S, 1)",
     .where = "zoo/models/qaconv.c:attention_rate", .output = "attention_rate"},
    {.title = "Conv features, width 1", .equation = "c<sub>1</sub> = relu(conv1d<sub>1</sub>"
     "((v &middot; attention_rate)<sup>T</sup>))  &nbsp; (B, F, S)",
     .where = "zoo/models/qaconv.c:span_logits", .output = "conv_output1"},
    {.title = "Conv features, width 3", .equation = "c<sub>3</sub> = relu(conv1d<sub>3</sub>(&middot;))",
     .where = "zoo/models/qaconv.c:span_logits", .output = "conv_output3"},
    {.title = "Conv features, width 5", .equation = "c<sub>5</sub> = relu(conv1d<sub>5</sub>(&middot;))",
     .where = "zoo/models/qaconv.c:span_logits", .output = "conv_output5"},
    {.title = "Answer start logits",
     .equation = "z = [c<sub>1</sub>; c<sub>3</sub>; c<sub>5</sub>]<sup>T</sup> W  &nbsp; "
                 "start = z[:, :, 0]  &nbsp; (B, S)",
     .where = "zoo/models/qaconv.c:span_logits", .output = "start_logits"},
    {.title = "Answer end logits", .equation = "end = z[:, :, 1]  &nbsp; (B, S)",
     .where = "zoo/models/qaconv.c:span_logits", .output = "end_logits"},
    {.title = "Question type", .equation = "softmax(qv W<sub>type</sub>)  &nbsp; (B, C)",
     .where = "zoo/models/qaconv.c:qaconv_run", .output = "query_logits"},
};

static const ExplainStep spanbert[] = {
    {.title = "Masked spans",
     .equation = "1 on the tokens of a masked span (write [MASK] in the text to mask it)",
     .where = "zoo/models/spanbert.c:run_masking", .output = "masking.mask_labels"},
    {.title = "Span boundaries",
     .equation = "each span (s, e) and the tokens just outside it, s &minus; 1 and e + 1",
     .where = "zoo/models/spanbert.c:find_spans", .output = "sbo.span_start"},
    {.title = "Span offsets", .equation = "p<sub>i</sub> = i &minus; s + 1 for each masked token "
     "x<sub>i</sub> of span (s, e)",
     .where = "zoo/models/spanbert.c:find_spans", .output = "sbo.position"},
    {.title = "Left boundary vectors",
     .equation = "x<sub>s&minus;1</sub>: the encoder's output just left of the span  &nbsp; "
                 "(n_masked, H)",
     .where = "zoo/models/spanbert.c:sbo_head_forward", .output = "sbo.x_left"},
    {.title = "Right boundary vectors",
     .equation = "x<sub>e+1</sub>: just right of the span  &nbsp; (n_masked, H)",
     .where = "zoo/models/spanbert.c:sbo_head_forward", .output = "sbo.x_right"},
    {.title = "SBO input h<sub>0</sub>",
     .equation = "h<sub>0</sub> = [x<sub>s&minus;1</sub>; x<sub>e+1</sub>; "
                 "p<sub>i&minus;s+1</sub>]  &nbsp; (n_masked, D0)",
     .where = "zoo/models/spanbert.c:sbo_head_forward", .output = "sbo.h0"},
    {.title = "MLM predictions",
     .equation = "z = LN(GELU(X<sub>L</sub> W<sub>T</sub>)) E<sub>word</sub><sup>T</sup> + b  "
                 "&nbsp; (B, S, V)",
     .where = "zoo/models/bert_heads.c:bertc_bert_lm_head_forward", .output = "mlm_logits"},
    {.title = "SBO predictions from the boundaries",
     .equation = "y<sub>i</sub> = LN(GELU(W<sub>2</sub> LN(GELU(W<sub>1</sub> h<sub>0</sub>))))"
                 "; &nbsp; z<sub>i</sub> = y<sub>i</sub> E<sup>T</sup>  &nbsp; (B, S, V)",
     .where = "zoo/models/spanbert.c:sbo_head_forward", .output = "sbo_logits"},
};

static const ExplainStep tokcls[] = {
    {.title = "Token classifier",
     .equation = "z<sub>t</sub> = X<sub>L</sub>[t] W<sub>C</sub> + b<sub>C</sub>  &nbsp; "
                 "(B, S, num_labels)",
     .where = "zoo/models/bert_token_classification.c:tokcls_forward", .output = "logits"},
};

static const ExplainStep qa[] = {
    {.title = "Start logits",
     .equation = "[start, end] = X<sub>L</sub> W<sub>qa</sub> + b  &nbsp; (B, S) each",
     .where = "zoo/models/bert_question_answering.c:qa_forward", .output = "start_logits"},
    {.title = "End logits", .equation = "end = (X<sub>L</sub> W<sub>qa</sub> + b)[:, :, 1]",
     .where = "zoo/models/bert_question_answering.c:qa_forward", .output = "end_logits"},
};

static const ExplainStep nsp[] = {
    POOLER,
    {.title = "Next-sentence classifier",
     .equation = "z = p W<sub>NSP</sub> + b  &nbsp; (B, 2): IsNext, NotNext",
     .where = "zoo/models/bert_next_sentence.c:nsp_forward", .output = "logits"},
};

static const ExplainStep pretraining[] = {
    POOLER,
    {.title = "Masked-LM head",
     .equation = "z = LN(GELU(X<sub>L</sub> W<sub>T</sub>)) E<sub>word</sub><sup>T</sup> + b  "
                 "&nbsp; (B, S, V)",
     .where = "zoo/models/bert_pretraining.c:pretraining_forward", .output = "prediction_logits"},
    {.title = "Next-sentence head",
     .equation = "z = p W<sub>NSP</sub> + b  &nbsp; (B, 2)",
     .where = "zoo/models/bert_pretraining.c:pretraining_forward", .output = "seq_relationship_logits"},
};

static const ExplainStep multiple_choice[] = {
    {.title = "Pooler (every choice)",
     .equation = "p<sub>c</sub> = tanh(X<sub>L</sub><sup>(c)</sup>[:, 0] W<sub>P</sub> + b)  "
                 "&nbsp; (B&middot;C, H)",
     .where = "zoo/models/bert.c:pooler_forward", .output = "pooler_output"},
    {.title = "Choice scores",
     .equation = "z<sub>c</sub> = p<sub>c</sub> w + b, reshaped to (B, C)",
     .where = "zoo/models/bert_multiple_choice.c:mc_forward", .output = "logits"},
};

/* ---- the table ---------------------------------------------------------- */

static const char *const nsp_labels[] = {"IsNext", "NotNext"};

#define ENCODER(list) .encoder = list, .n_encoder = N_OF(list)
#define STEPS(list) .steps = list, .n_steps = N_OF(list)

static const ExplainArch table[] = {
    {.arch = "BertModel", ENCODER(bert_encoder), STEPS(pooler),
     .mechanism = "The BERT encoder alone: every token's vector is rewritten, layer by layer, "
                  "as a mix of the others weighted by attention."},
    {.arch = "BertForSequenceClassification", ENCODER(bert_encoder), STEPS(classifier),
     .mechanism = "A classifier on the pooled [CLS] vector.",
     .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}}},
    {.arch = "BertForMaskedLM", ENCODER(bert_encoder), STEPS(mlm),
     .mechanism = "Every position predicts its token from the vocabulary; write [MASK] in the "
                  "text to see what it fills in.",
     .predict = {{.kind = PREDICT_TOKENS, .output = "logits"}}},
    {.arch = "CGBertForSequenceClassification", ENCODER(cg_encoder), STEPS(cg_head),
     .mechanism = "Context-guided attention (Wu &amp; Ong 2021): a context (--context, the "
                  "aspect) is mixed into every head's queries and keys through gates "
                  "&lambda;<sub>Q</sub>, &lambda;<sub>K</sub> in (0, 1), one per head and "
                  "token: a tall bar means that token's query (key) is taken mostly from the "
                  "context.",
     .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}}},
    {.arch = "QACGBertForSequenceClassification", ENCODER(qacg_encoder), STEPS(cg_head),
     .mechanism = "Quasi-attention (Wu &amp; Ong 2021): a second attention from the context, "
                  "scaled by &lambda;<sub>A</sub> in (&minus;1, 1), is added to softmax "
                  "attention, so context can take attention away: the quasi-attention is drawn "
                  "on a diverging palette, blue below 0 and red above.",
     .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}}},
    {.arch = "Summarizer", ENCODER(bert_encoder), STEPS(bertsum),
     .mechanism = "Extractive summarization (Liu 2019): each sentence's [CLS] vector goes "
                  "through an inter-sentence Transformer where sentences attend to sentences, "
                  "then gets a score; the top sentences are the summary. Separate sentences "
                  "with a period.",
     .predict = {{.kind = PREDICT_SENTENCES, .output = "sent_scores"}}},
    {.arch = "QAConvModelV2", ENCODER(bert_encoder), STEPS(qaconv),
     .mechanism = "QAConv: the question (TEXT, the first query_len tokens) is pooled into one "
                  "query vector that weighs the context tokens (TEXT_PAIR); convolutions of "
                  "width 1, 3 and 5 over the weighted context give the answer's start and end.",
     .predict = {{.kind = PREDICT_SPAN, .output = "start_logits", .output2 = "end_logits"},
                 {.kind = PREDICT_CLASSES, .output = "query_logits"}}},
    {.arch = "SpanBertForPreTraining", ENCODER(bert_encoder), STEPS(spanbert),
     .mechanism = "SpanBERT (Joshi et al. 2020): whole spans are masked and each masked token "
                  "is predicted twice, by the MLM head from its own position and by the span "
                  "boundary objective (SBO) from the two tokens just outside the span and its "
                  "offset inside it. Write [MASK] [MASK] in the text to mask a span.",
     .predict = {{.kind = PREDICT_TOKENS, .output = "mlm_logits"},
                 {.kind = PREDICT_MASKED_ROWS, .output = "sbo_logits"}}},
    {.arch = "BertForTokenClassification", ENCODER(bert_encoder), STEPS(tokcls),
     .mechanism = "A label for every token (named entities, parts of speech).",
     .predict = {{.kind = PREDICT_TOKEN_CLASSES, .output = "logits"}}},
    {.arch = "BertForQuestionAnswering", ENCODER(bert_encoder), STEPS(qa),
     .mechanism = "Extractive QA: two scores per token, for the answer's start and its end; "
                  "TEXT is the question, TEXT_PAIR the context.",
     .predict = {{.kind = PREDICT_SPAN, .output = "start_logits", .output2 = "end_logits"}}},
    {.arch = "BertForNextSentencePrediction", ENCODER(bert_encoder), STEPS(nsp),
     .mechanism = "Does TEXT_PAIR follow TEXT? A two-way classifier on the pooled [CLS].",
     .predict = {{.kind = PREDICT_CLASSES, .output = "logits", .labels = nsp_labels}}},
    {.arch = "BertForPreTraining", ENCODER(bert_encoder), STEPS(pretraining),
     .mechanism = "BERT's two pre-training heads: masked tokens and next sentence.",
     .predict = {{.kind = PREDICT_TOKENS, .output = "prediction_logits"},
                 {.kind = PREDICT_CLASSES, .output = "seq_relationship_logits",
                  .labels = nsp_labels}}},
    {.arch = "BertForMultipleChoice", ENCODER(bert_encoder), STEPS(multiple_choice),
     .mechanism = "Each choice (TEXT with TEXT_PAIR) is encoded on its own and scored; the "
                  "pictures show choice 0.",
     .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}}},
};

static const ExplainArch generic = {.arch = "", ENCODER(bert_encoder),
                                    .mechanism = "A BERT encoder with its own head."};

const ExplainArch *explain_arch_at(int i)
{
    return i >= 0 && i < N_OF(table) ? &table[i] : NULL;
}

const ExplainArch *explain_arch(const char *name)
{
    for (int i = 0; i < N_OF(table); i++)
        if (strcmp(table[i].arch, name) == 0)
            return &table[i];
    return &generic;
}
