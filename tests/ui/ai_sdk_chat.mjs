// The AI SDK's own chat (the `ai` package's AbstractChat with its
// DefaultChatTransport, what `useChat` runs in a page) against a behest
// server: a question answered with a tool, then a refund the person
// approves. Every chunk is read back through the package's
// parseJsonEventStream and its uiMessageChunkSchema.
//
// With `nested`, the refund is asked by an agent the first one calls: its
// approval shows, is given, and the chat sends it by itself
// (`sendAutomaticallyWhen`).
//
// With `once`, only the question is asked.
//
// Usage: node ai_sdk_chat.mjs <api url> [nested|once]; prints one JSON object.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  parseJsonEventStream,
  uiMessageChunkSchema,
} from 'ai';

const api = process.argv[2];
const chunks = [];
const headers = [];
const reading = [];
// Each response is read twice: by the chat, and by the package's own
// parser and schema, so that every chunk is checked.
const recordingFetch = async (url, init) => {
  const response = await fetch(url, init);
  headers.push(response.headers.get('x-vercel-ai-ui-message-stream'));
  const [forChat, forCheck] = response.body.tee();
  reading.push((async () => {
    const parsed = parseJsonEventStream({ stream: forCheck, schema: uiMessageChunkSchema });
    for await (const result of parsed) {
      chunks.push(result.success ? result.value : { invalid: String(result.error) });
    }
  })());
  return new Response(forChat, { status: response.status, headers: response.headers });
};

class State {
  status = 'ready';
  error = undefined;
  messages = [];
  pushMessage = (message) => { this.messages = [...this.messages, message]; };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (index, message) => {
    this.messages = this.messages.map((old, at) => (at === index ? message : old));
  };
  snapshot = (value) => structuredClone(value);
}

class HeadlessChat extends AbstractChat {
  constructor(init) { super({ ...init, state: new State() }); }
}

let finishes = 0;
const errors = [];
const chat = new HeadlessChat({
  id: 'chat-1',
  transport: new DefaultChatTransport({ api, fetch: recordingFetch }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onFinish: () => { finishes += 1; },
  onError: (error) => { errors.push(String(error?.message ?? error)); },
});

const settle = async (count) => {
  const until = Date.now() + 20000;
  while ((finishes < count || chat.status !== 'ready') && errors.length === 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

const scenario = process.argv[3];
let finished = 0;
if (scenario !== 'nested') {
  await chat.sendMessage({ text: "What's the weather in Paris?" });
  await settle((finished += 1));
}
if (scenario !== 'once') {
  await chat.sendMessage({ text: 'Please refund order 42' });
  await settle((finished += 1));
}
const asked = chat.messages.at(-1).parts.find((part) => part.type === 'tool-refund');
const approvalAsked = structuredClone(asked);
if (asked?.state === 'approval-requested') {
  await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
  await settle((finished += 1));
}
await Promise.all(reading);
console.log(JSON.stringify({ messages: chat.messages, approvalAsked, chunks, headers, errors, status: chat.status }));
