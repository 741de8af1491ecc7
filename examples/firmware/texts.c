/* texts.c — the texts the example firmware (main.c) classifies, one a line.
 * Replace them with your own, or generate this file: `make cross-test`
 * embeds 229 held-out texts with tools/embed_files.py (the same two names). */
const unsigned char firmware_texts[] = "The compiler crashed on my new laptop.\n"
                                       "Bake the bread for forty minutes.\n"
                                       "The court dismissed the appeal.";
const unsigned long firmware_texts_len = sizeof firmware_texts - 1;
