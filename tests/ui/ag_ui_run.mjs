// AG-UI's own client (@ag-ui/client's HttpAgent, with its event
// verification) against a behest server: a question answered with a tool,
// then a refund that pauses on an interrupt, answered in a second run.
// Every event is checked against @ag-ui/core's schemas.
//
// With `once`, only the question is asked.
//
// Usage: node ag_ui_run.mjs <url> <approve|deny|once>; prints one JSON object.
import { HttpAgent, randomUUID, buildResumeArray } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';

const [url, decision] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId: 'thread-1' });
const runs = [];

async function run(params) {
  const events = [];
  const invalid = [];
  let error;
  let outcome;
  try {
    await agent.runAgent(params, {
      onEvent: ({ event }) => {
        events.push(event);
        const checked = EventSchemas.safeParse(event);
        if (!checked.success) invalid.push({ event, issues: checked.error.issues });
      },
      onRunFinishedEvent: (finished) => { outcome = finished.outcome ?? null; },
    });
  } catch (thrown) {
    error = String(thrown?.message ?? thrown);
  }
  runs.push({
    events,
    invalid,
    error,
    outcome,
    pendingInterrupts: structuredClone(agent.pendingInterrupts),
    state: structuredClone(agent.state),
  });
}

agent.addMessage({ id: randomUUID(), role: 'user', content: "What's the weather in Paris?" });
await run({});
if (decision === 'once') {
  console.log(JSON.stringify({ runs, messages: agent.messages, state: agent.state }));
  process.exit(0);
}
agent.addMessage({ id: randomUUID(), role: 'user', content: 'Please refund order 42' });
await run({});
const answers = Object.fromEntries(agent.pendingInterrupts.map((interrupt) => [
  interrupt.id,
  {
    status: 'resolved',
    payload: decision === 'approve'
      ? { approved: true }
      : { approved: false, reason: 'not without a receipt' },
  },
]));
await run({ resume: buildResumeArray(agent.pendingInterrupts, answers) });
console.log(JSON.stringify({ runs, messages: agent.messages, state: agent.state }));
