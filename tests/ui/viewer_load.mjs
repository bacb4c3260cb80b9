// How long the run viewer takes to show a log, in headless Chromium, as a
// paired ratio: each round fetches the log's text alone (the floor: the
// bytes over loopback, read as text) and opens it in the page (fetched,
// read, drawn), the order turned every round.
//
// Usage: node viewer_load.mjs <viewer url> <chromium> <file> <rounds>; prints JSON.
import { chromium } from 'playwright-core';

const [url, executablePath, file, rounds] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
await page.goto(url);
await page.waitForSelector('aside button[data-file]');
const fetchOnly = () => page.evaluate(async (name) => {
  const started = performance.now();
  const text = await (await fetch('api/runs/' + encodeURIComponent(name))).text();
  return [performance.now() - started, text.length];
}, file);
const show = () => page.evaluate(async (name) => {
  const started = performance.now();
  await openFile(name);
  // Drawn: the browser has laid the page out.
  document.body.getBoundingClientRect();
  return performance.now() - started;
}, file);
const floors = [];
const shown = [];
let bytes = 0;
for (let round = 0; round < Number(rounds) + 3; round += 1) {
  let floor;
  let full;
  if (round % 2 === 0) { [floor, bytes] = await fetchOnly(); full = await show(); }
  else { full = await show(); [floor, bytes] = await fetchOnly(); }
  if (round >= 3) { floors.push(floor); shown.push(full); }
}
await browser.close();
console.log(JSON.stringify({ floors, shown, bytes }));
