// The run viewer in headless Chromium, driven by playwright-core: the demo
// runs (one still going, followed until it ends; one with a nested agent,
// a refused call, a fallback and a guardrail's stop), then the bad files
// the test wrote beside them. Keeps screenshots; prints what each page
// showed as JSON.
//
// Usage: node viewer_page.mjs <viewer url> <chromium> <screenshot folder>
import { chromium } from 'playwright-core';

const [url, executablePath, shots] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
const out = { console: [], requests: [], files: {} };
const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
page.on('console', (message) => out.console.push(`${message.type()}: ${message.text()}`));
page.on('pageerror', (error) => out.console.push(`pageerror: ${error.message}`));
page.on('request', (request) => out.requests.push(request.url()));

// What the page shows of the open file.
const shown = () => page.evaluate(() => {
  const texts = (selector) => [...document.querySelectorAll(selector)].map((node) => node.innerText);
  return {
    runs: document.querySelectorAll('.run').length,
    status: texts('.run .status'),
    summary: texts('.run .summary'),
    error: texts('.run-error'),
    agents: [...document.querySelectorAll('.agent')].map((node) => node.dataset.agent),
    calls: [...document.querySelectorAll('.call')].map((node) => ({ tool: node.dataset.tool, state: node.dataset.state, text: node.innerText })),
    guardrails: [...document.querySelectorAll('.guardrail')].map((node) => ({ action: node.dataset.action, text: node.innerText })),
    notices: [...document.querySelectorAll('.notice')].map((node) => ({ kind: node.dataset.kind, text: node.innerText })),
    problems: texts('.problems'),
    turns: document.querySelectorAll('details.turn').length,
    bars: document.querySelectorAll('.bar').length,
    more: texts('button.more'),
    all: texts('button.all'),
    renderedMs: Number(document.getElementById('view').dataset.renderedMs ?? -1),
  };
});

async function openFile(name, ready) {
  const started = Date.now();
  await page.click(`aside button[data-file="${name}"]`);
  await page.waitForFunction(ready, null, { timeout: 30000 });
  return Date.now() - started;
}

try {
  await page.goto(url);
  await page.waitForSelector('aside button[data-file]');
  out.list = await page.$$eval('aside button[data-file]', (nodes) => nodes.map((node) => node.dataset.file));

  // The run still going: seen running, then followed to its end.
  await openFile('live.jsonl', () => document.querySelector('.run .status'));
  out.files.live = { first: await shown() };
  await page.waitForFunction(() => document.querySelector('.run .status')?.dataset.status === 'completed', null, { timeout: 30000 });
  out.files.live.last = await shown();

  await openFile('support.jsonl', () => document.querySelector('.run .status')?.dataset.status === 'failed');
  out.files.support = await shown();
  await page.screenshot({ path: `${shots}/viewer_support.png`, fullPage: true });

  await openFile('refund.jsonl', () => document.querySelector('.run .status')?.dataset.status === 'completed');
  out.files.refund = await shown();
  out.files.refund.approvals = await page.$$eval('.approval', (nodes) => nodes.map((node) => node.dataset.approval));
  out.files.refund.tree = await page.$eval('.tree', (node) => node.innerText);

  await openFile('truncated.jsonl', () => document.querySelector('.problems'));
  out.files.truncated = await shown();

  await openFile('foreign.json', () => document.querySelector('.problems'));
  out.files.foreign = await shown();

  await openFile('binary.jsonl', () => document.querySelector('.problems'));
  out.files.binary = await shown();

  const took = await openFile('steps_10000.jsonl', () => document.querySelector('.run .status')?.dataset.status === 'completed');
  out.files.steps = { ...(await shown()), clickToShownMs: took };
  await page.click('button.more');
  await page.waitForFunction(() => document.querySelectorAll('details.turn').length > 200);
  out.files.steps.afterMore = (await shown()).turns;
  await page.screenshot({ path: `${shots}/viewer_10000_steps.png` });

  await openFile('answer_10mib.jsonl', () => document.querySelector('.run .status')?.dataset.status === 'completed');
  out.files.huge = await shown();
  await page.screenshot({ path: `${shots}/viewer_10mib_answer.png` });

  // Still usable after all of them.
  await openFile('support.jsonl', () => document.querySelector('.run .status')?.dataset.status === 'failed');
  out.files.again = (await shown()).calls.length;
} catch (error) {
  out.error = String(error?.message ?? error);
  try { await page.screenshot({ path: `${shots}/viewer_error.png`, fullPage: true }); } catch { /* the page is gone */ }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
