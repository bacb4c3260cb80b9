// The chat example's page in headless Chromium, driven by playwright-core:
// ask about the weather, ask for a refund, click Approve, read the answers.
// Keeps a screenshot.
//
// Usage: node chat_page.mjs <page url> <chromium> <screenshot.png>; prints JSON.
import { chromium } from 'playwright-core';

const [url, executablePath, screenshot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
const out = { console: [], requests: [] };
try {
  const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
  page.on('console', (message) => out.console.push(`${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => out.console.push(`pageerror: ${error.message}`));
  // Nothing but the page's own server may be reached.
  page.on('request', (request) => out.requests.push(request.url()));
  page.on('response', (response) => {
    if (response.status() >= 400) out.console.push(`error: ${response.status()} for ${response.url()}`);
  });
  await page.goto(url);

  await page.fill('#text', "What's the weather in Paris?");
  await page.click('#submit');
  await page.waitForSelector('.tool[data-tool="get_weather"][data-state="output-available"]');
  await page.waitForFunction(() => document.querySelectorAll('.assistant .text').length >= 1
    && !document.querySelector('#submit').disabled);

  await page.fill('#text', 'Please refund order 42');
  await page.click('#submit');
  await page.waitForSelector('.tool[data-tool="refund"][data-state="approval-requested"] button.approve');
  out.beforeApproval = await page.locator('.tool[data-tool="refund"]').innerText();
  await page.click('.tool[data-tool="refund"] button.approve');
  await page.waitForSelector('.tool[data-tool="refund"][data-state="output-available"]');
  await page.waitForFunction(() => !document.querySelector('#submit').disabled);

  // Two refunds in one answer, answered one at a time: the page sends
  // each answer as it is given, the first again with the second.
  await page.fill('#text', 'Please refund orders 7 and 8');
  await page.click('#submit');
  await page.waitForFunction(() => document.querySelectorAll('.tool[data-tool="refund"][data-state="approval-requested"]').length === 2);
  await page.click('.tool[data-tool="refund"][data-state="approval-requested"] button.approve');
  await page.waitForFunction(() => !document.querySelector('#submit').disabled
    && document.querySelectorAll('.tool[data-tool="refund"][data-state="approval-requested"]').length === 1);
  await page.click('.tool[data-tool="refund"][data-state="approval-requested"] button.deny');
  await page.waitForSelector('.tool[data-tool="refund"][data-state="output-denied"]');
  await page.waitForFunction(() => !document.querySelector('#submit').disabled);

  out.messages = await page.$$eval('#log .message', (nodes) => nodes.map((node) => ({
    role: node.dataset.role,
    text: node.innerText,
  })));
  out.tools = await page.$$eval('.tool', (nodes) => nodes.map((node) => ({
    tool: node.dataset.tool,
    state: node.dataset.state,
    text: node.innerText,
  })));
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (error) {
  out.error = String(error?.message ?? error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
