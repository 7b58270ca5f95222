// Drives `ucl serve` with the official OpenAI Node client, the way any
// tool would use it with base_url pointed at ucl. Called by
// test/serve_e2e_test.go:
//
//   node client.mjs BASE_URL TOKEN SESSION MODE QUESTION
//
// MODE is plain, stream or models. Prints one JSON line: what the client
// got (for stream, every content delta as it arrived), or the API error's
// status.
import OpenAI, { APIError } from "openai";

const [baseURL, apiKey, session, mode, question] = process.argv.slice(2);
const client = new OpenAI({
  baseURL,
  apiKey,
  maxRetries: 0,
  defaultHeaders: { "X-UCL-Session": session },
});
const messages = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: question },
];

try {
  if (mode === "models") {
    const page = await client.models.list();
    console.log(JSON.stringify({ models: page.data.map((m) => m.id) }));
  } else if (mode === "stream") {
    const stream = await client.chat.completions.create({
      model: "fake-model", messages, temperature: 0.2, stream: true,
    });
    const deltas = [];
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta?.content;
      if (d) deltas.push(d);
    }
    console.log(JSON.stringify({ deltas, content: deltas.join("") }));
  } else {
    const r = await client.chat.completions.create({
      model: "fake-model", messages, temperature: 0.2,
    });
    console.log(JSON.stringify({ content: r.choices[0].message.content, id: r.id }));
  }
} catch (err) {
  if (err instanceof APIError) {
    console.log(JSON.stringify({ status: err.status ?? 0, error: String(err.message) }));
  } else {
    throw err;
  }
}
