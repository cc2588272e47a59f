// Plays every game in headless Chromium by clicking only, against fast agents, to the end; takes
// a move back; replays a record with the arrow keys; screenshots each board. Then: the front
// page and a game started from it at a named level; two browsers (two contexts, nothing shared)
// play each other through a join link, and the page forgets its tokens once the game is over and
// left; a two-person Sagrada through a join link, where the creator's page cannot show the other
// seat's secret objective; Catan with trades between people and an agent, at one screen and
// through a join link; and a game in progress is picked up again after the server restarts.
//
//   node play.cjs BASE_URL OUT_DIR            (PLAYWRIGHT_CORE, CHROMIUM: paths; GAMES: a subset)
//
// Prints one JSON line per check and exits non-zero on the first failure. To restart the server
// it prints `RESTART` and waits for a line `ok` on its standard input.
'use strict';

const path = require('path');
const fs = require('fs');
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const readline = require('readline');
const input = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const MATCH = /\/m\/([0-9a-f]{32})/;

const [base, outDir] = process.argv.slice(2);
if (!base || !outDir) {
  console.error('usage: node play.cjs BASE_URL OUT_DIR');
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });

// Each game, the options that keep it short, and its opponents (fast agents).
const GAMES = [
  { name: 'tictactoe', params: {}, seats: ['human', 'random'], mid: 2 },
  { name: 'connect4', params: {}, seats: ['human', 'mcts:iters=200'], undo: true },
  { name: 'santorini', params: {}, seats: ['human', 'mcts:iters=200'] },
  { name: 'cathedral', params: {}, seats: ['human', 'random'] },
  { name: 'sagrada', params: {}, seats: ['human', 'random'] },
  { name: 'catan', params: { players: '3', points: '4' }, seats: ['human', 'random', 'random'] },
].filter((g) => !process.env.GAMES || process.env.GAMES.split(',').includes(g.name));

// A small seeded generator, so a failing run clicks the same way again.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function newGame(page, game) {
  await page.goto(`${base}/?game=${game.name}`);
  await page.waitForSelector('#seats input');
  // The cards' boards load after the page: the form below them moves until they have.
  await page.waitForFunction(() => document.querySelectorAll('.game-card .thumb svg').length === 6);
  for (const [k, v] of Object.entries(game.params)) {
    await page.fill(`#param-${k}`, v);
    await page.dispatchEvent(`#param-${k}`, 'change');
  }
  await page.waitForFunction((n) => document.querySelectorAll('#seats input').length === n, game.seats.length);
  for (let i = 0; i < game.seats.length; i++) await page.fill(`#seats input[data-seat="${i}"]`, game.seats[i]);
  await page.fill('#seed', '7');
  await page.fill('#move-time', '300');
  try {
    await page.click('#start', { timeout: 10_000 });
  } catch (e) {
    await page.screenshot({ path: path.join(outDir, 'start-hidden.png'), fullPage: true });
    throw e;
  }
  await page.waitForURL(MATCH);
  await page.waitForSelector('#board svg');
}

// The page's state: over, our move (with the clickable targets), or waiting.
async function status(page) {
  return page.evaluate(() => {
    if (document.querySelector('#result')) return { over: true, text: document.querySelector('#result').textContent };
    const targets = [...document.querySelectorAll('#board [data-t].hl, #choices button.hl')];
    return { over: false, targets: targets.length, ply: window.M && window.M.snap ? window.M.snap.ply : -1 };
  });
}

async function clickTarget(page, pick) {
  // A mark drawn for a target (not clickable itself: its hit area is) is not one to click.
  const handles = await page.$$('#board [data-t].hl:not([pointer-events="none"]), #choices button.hl');
  if (!handles.length) return false;
  const h = handles[Math.floor(pick * handles.length)];
  try {
    await h.scrollIntoViewIfNeeded({ timeout: 2000 });
    await h.click({ timeout: 5000 });
    return true;
  } catch (e) {
    // The page redrew between finding the target and clicking it (an agent moved): look again.
    if (/not attached|detached|Timeout/.test(String(e))) return false;
    throw e;
  }
}

async function playToEnd(page, game, random, report) {
  const deadline = Date.now() + 240_000;
  let clicks = 0;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`${game.name}: not over after 240 s (${clicks} clicks)`);
    const s = await status(page);
    if (s.over) return s.text;
    if (s.targets > 0) {
      if (await clickTarget(page, random())) clicks += 1;
      report.clicks = clicks;
      // Early, so that the agent's reply cannot end the game (connect four: no four before ply 7).
      if (game.undo && clicks === 2 && !report.undone) await checkUndo(page, report, s.ply);
      if (clicks === (game.mid || 6) && !report.midShot) {
        report.midShot = path.join(outDir, `${game.name}-mid.png`);
        await page.locator('.match').screenshot({ path: report.midShot });
      }
    } else {
      await page.waitForTimeout(20);
    }
  }
}

async function checkUndo(page, report, clickedAt) {
  // Wait for the agent's reply, then take back our move and its reply. The snapshot from before
  // our click still lists our moves, so the wait is for a later ply as well: under load it could
  // otherwise pass at once and send the undo while the agent was thinking.
  await page.waitForFunction(
    (b) => window.M.snap && window.M.snap.ply > b && (window.M.snap.legal.length > 0 || window.M.snap.result),
    clickedAt,
  );
  if (await page.evaluate(() => !!window.M.snap.result)) throw new Error('the game ended before the undo check');
  const before = await page.evaluate(() => window.M.snap.ply);
  await page.click('#undo');
  await page.waitForFunction((b) => window.M.snap && window.M.snap.ply < b && window.M.snap.legal.length > 0, before);
  report.undone = { before, after: await page.evaluate(() => window.M.snap.ply) };
}

async function checkReplay(page, report) {
  const id = page.url().match(MATCH)[1];
  const record = await page.evaluate(async (m) => (await fetch(`/api/matches/${m}/record`)).text(), id);
  await page.goto(`${base}/?advanced=1`);
  await page.setInputFiles('#records-file', { name: 'game.jsonl', mimeType: 'application/json', buffer: Buffer.from(record) });
  await page.click('#replay');
  await page.waitForURL((u) => MATCH.test(u) && !u.href.includes(id));
  await page.waitForSelector('#board svg');
  const at = () => page.evaluate(() => window.M.snap.ply);
  if ((await at()) !== 0) throw new Error('a replay opens at ply 0');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => window.M.snap.ply === 1);
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => window.M.snap.ply === 2);
  await page.keyboard.press('ArrowLeft');
  await page.waitForFunction(() => window.M.snap.ply === 1);
  await page.keyboard.press('End');
  await page.waitForFunction(() => window.M.snap.ply === window.M.snap.plies && window.M.snap.result);
  report.replayed = await at();
}

// A phone-sized screen: the page fits its width (no sideways scrolling) and the board is drawn.
async function checkPhone(browser, report) {
  const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  await phone.goto(`${base}/`);
  await phone.waitForSelector('.game-card .thumb svg');
  report.phoneFrontShot = path.join(outDir, 'phone-front.png');
  await phone.screenshot({ path: report.phoneFrontShot, fullPage: false });
  await phone.click('.level-button[data-game="santorini"][data-level="0"]');
  await phone.waitForSelector('#board svg');
  const widths = await phone.evaluate(() => [document.documentElement.scrollWidth, document.querySelector('#board svg').getBoundingClientRect().width]);
  if (widths[0] > 392 || widths[1] < 300) throw new Error(`phone layout: page ${widths[0]} px wide, board ${widths[1]} px`);
  report.phone = { page_width: widths[0], board_width: Math.round(widths[1]) };
  report.phoneShot = path.join(outDir, 'phone.png');
  await phone.screenshot({ path: report.phoneShot, fullPage: false });
  await phone.close();
}

// Catan on a phone: the board fills the screen's width (the sea cropped to the island and its
// harbours) and every corner to click is at least 32 px across; where corners and roads are
// both offered, the bar under the board says which a tap makes.
async function checkPhoneCatan(browser, report) {
  const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  // The front page's variants on a phone: Santorini's card with gods.
  await phone.goto(`${base}/`);
  await phone.waitForSelector('select.variant[data-game="santorini"]');
  await phone.selectOption('select.variant[data-game="santorini"]', { label: 'With gods' });
  await phone.waitForSelector('select.picked[data-game="santorini"]');
  report.variantsShot = path.join(outDir, 'phone-front-variants.png');
  await phone.locator('.game-card[data-game="santorini"]').screenshot({ path: report.variantsShot });
  await newGame(phone, { name: 'catan', params: { players: '3' }, seats: ['human', 'random', 'random'] });
  await phone.waitForFunction(() => window.M.snap && window.M.snap.legal.length > 0);
  const m = await phone.evaluate(() => {
    const svg = document.querySelector('#board svg').getBoundingClientRect();
    const hexes = [...document.querySelectorAll('#board polygon')].map((p) => p.getBoundingClientRect());
    const island = { x0: Math.min(...hexes.map((r) => r.left)), x1: Math.max(...hexes.map((r) => r.right)), y0: Math.min(...hexes.map((r) => r.top)), y1: Math.max(...hexes.map((r) => r.bottom)) };
    const targets = [...document.querySelectorAll('#board .hl')].filter((e) => getComputedStyle(e).pointerEvents !== 'none').map((e) => e.getBoundingClientRect());
    return { page: document.documentElement.scrollWidth, board: [svg.width, svg.height], island: ((island.x1 - island.x0) * (island.y1 - island.y0)) / (svg.width * svg.height), targets: targets.length, smallest: Math.min(...targets.map((r) => Math.min(r.width, r.height))) };
  });
  report.phone = m;
  if (m.page > 392) throw new Error(`the page is ${m.page} px wide on a 390 px phone`);
  if (m.island < 0.6) throw new Error(`the island fills ${Math.round(100 * m.island)}% of the board`);
  if (!m.targets || m.smallest < 32) throw new Error(`a corner to tap is ${m.smallest.toFixed(1)} px across`);
  report.shot = path.join(outDir, 'phone-catan.png');
  await phone.screenshot({ path: report.shot, fullPage: false });
  await phone.close();
}

// Two people, two browsers: the first creates a game for two persons and sends the second the
// join link for seat 1; they play it out by clicking, each seeing only their own seat's moves.
async function checkTwoPlayers(browser, report) {
  const a = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const b = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await newGame(a, { name: 'connect4', params: {}, seats: ['human', 'human'] });
  const link = await a.inputValue('input.join[data-seat="1"]');
  await b.goto(link);
  await b.waitForSelector('#board svg');
  if (new URL(b.url()).hash) throw new Error('the join link\'s token stays in the address bar');
  const random = rng(77);
  const deadline = Date.now() + 120_000;
  let moves = 0;
  for (;;) {
    if (Date.now() > deadline) throw new Error('two players: not over after 120 s');
    const [sa, sb] = [await status(a), await status(b)];
    if (sa.over && sb.over) { report.result = sa.text; break; }
    // Right after a move the mover's page may still show its targets while the other page
    // already has its turn: click only when exactly one page offers a move.
    const mover = sa.targets > 0 && sb.targets === 0 ? a : sb.targets > 0 && sa.targets === 0 ? b : null;
    if (mover && (await clickTarget(mover, random()))) moves += 1;
    else await a.waitForTimeout(20);
  }
  report.moves = moves;
  report.seats = await Promise.all([a, b].map((p) => p.evaluate(() => window.M.viewer)));
  if (report.seats[0] !== 0 || report.seats[1] !== 1) throw new Error(`the two browsers sat at ${report.seats}`);
  report.shot = path.join(outDir, 'two-players.png');
  await b.locator('.match').screenshot({ path: report.shot });
  // The game is over: leaving its page forgets its tokens.
  const id = b.url().match(MATCH)[1];
  await b.click('a.brand');
  await b.waitForSelector('.game-card');
  if (await b.evaluate((m) => localStorage.getItem('meeple.match.' + m), id)) throw new Error('a finished game\'s tokens stay after its page is left');
  report.forgotten = true;
  await a.context().close();
  await b.context().close();
}

// The front page: the games as a gallery with their boards, levels with their measured strength;
// a game started at a named level is that level's agent.
async function checkFront(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  await page.goto(`${base}/`);
  await page.waitForFunction(() => document.querySelectorAll('.game-card .thumb svg').length === 6);
  const cards = await page.evaluate(() => [...document.querySelectorAll('.game-card')].map((c) => ({
    game: c.dataset.game, levels: c.querySelectorAll('.level-button').length, strength: [...c.querySelectorAll('.level')].map((l) => (l.querySelector('.strength') || {}).title || ''),
  })));
  for (const c of cards) {
    if (c.levels < 3) throw new Error(`${c.game}: ${c.levels} levels`);
    if (!c.strength.slice(1).every((t) => /\d+\.\d% \[/.test(t))) throw new Error(`${c.game}: a level without its measured strength: ${c.strength}`);
  }
  report.cards = cards.length;
  report.frontShot = path.join(outDir, 'front.png');
  await page.screenshot({ path: report.frontShot, fullPage: true });
  const level = await page.evaluate(() => document.querySelector('.level-button[data-game="connect4"][data-level="1"]').textContent);
  await page.click('.level-button[data-game="connect4"][data-level="1"]');
  await page.waitForURL(MATCH);
  await page.waitForSelector('#board svg');
  const random = rng(11);
  for (let clicks = 0; clicks < 3;) {
    const s = await status(page);
    if (s.over) break;
    if (s.targets > 0) { if (await clickTarget(page, random())) clicks += 1; } else await page.waitForTimeout(20);
  }
  await page.waitForFunction(() => window.M.snap && (window.M.snap.legal.length > 0 || window.M.snap.result));
  report.level = level;
  report.opponent = await page.evaluate(() => window.M.snap.seats[1].spec);
  if (!report.opponent.startsWith('mcts:iters=2000')) throw new Error(`the ${level} level played ${report.opponent}`);
  report.levelShot = path.join(outDir, 'level-game.png');
  await page.locator('.match').screenshot({ path: report.levelShot });
  await page.context().close();
}

// The variants people play, chosen on the front page: Santorini with gods, each side's god picked
// (the computer plays the gods network, measured in that setting); Catan with three players.
async function checkVariants(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  await page.goto(`${base}/`);
  await page.waitForSelector('select.variant[data-game="santorini"]');
  await page.selectOption('select.variant[data-game="santorini"]', { label: 'With gods' });
  await page.waitForSelector('select.picked[data-game="santorini"][data-seat="1"]');
  report.godsLevels = await page.evaluate(() => [...document.querySelectorAll('.game-card[data-game="santorini"] .level')].map((l) => l.textContent.replace(/\s+/g, ' ').trim()));
  if (!report.godsLevels.some((t) => /Strongest.*gods network.*scores \d+% against Hard/.test(t))) throw new Error(`the gods levels: ${report.godsLevels.join(' | ')}`);
  await page.selectOption('select.picked[data-game="santorini"][data-seat="0"]', 'apollo');
  await page.selectOption('select.picked[data-game="santorini"][data-seat="1"]', 'pan');
  await page.selectOption('select.seat-choice[data-game="santorini"]', '1');
  report.variantShot = path.join(outDir, 'front-variants.png');
  await page.locator('.game-card[data-game="santorini"]').screenshot({ path: report.variantShot });
  await page.click('.level-button[data-game="santorini"][data-level="0"]');
  await page.waitForURL(MATCH);
  await page.waitForFunction(() => window.M && window.M.snap);
  report.gods = await page.evaluate(() => ({ game: window.M.snap.game, seats: window.M.snap.seats.map((x) => x.spec) }));
  // The person plays second with Apollo: the first seat's god (the computer's) is Pan.
  if (!/gods=pan\+apollo/.test(report.gods.game) || report.gods.seats[1] !== 'human') throw new Error(`the gods game: ${JSON.stringify(report.gods)}`);
  // The rules card says what the two gods in play do, and no others.
  await page.click('#rules-button');
  await page.waitForSelector('#rules:not([hidden])');
  report.godsRules = await page.textContent('#rules-body');
  if (!/Apollo: Your worker may move into an opponent/.test(report.godsRules) || !/Pan: You also win/.test(report.godsRules) || /Atlas/.test(report.godsRules)) throw new Error(`the gods' rules: ${report.godsRules}`);
  report.rulesShot = path.join(outDir, 'rules-gods.png');
  await page.locator('#rules .card').screenshot({ path: report.rulesShot });
  await page.keyboard.press('Escape');
  await page.goto(`${base}/`);
  await page.waitForSelector('select.variant[data-game="catan"]');
  await page.selectOption('select.variant[data-game="catan"]', { label: 'Three players' });
  report.catanLevels = await page.evaluate(() => [...document.querySelectorAll('.game-card[data-game="catan"] .level')].map((l) => l.textContent.replace(/\s+/g, ' ').trim()));
  if (!report.catanLevels.slice(1).every((t) => /not measured in this variant/.test(t))) throw new Error(`unmeasured levels should say so: ${report.catanLevels.join(' | ')}`);
  // Catan's card from the front page: the building costs and the trading of this variant.
  await page.click('button.rules[data-game="catan"]');
  await page.waitForSelector('#rules:not([hidden])');
  report.catanRules = await page.textContent('#rules-body');
  if (!/City \(2 points, replaces a settlement\): 3 ore, 2 grain/.test(report.catanRules) || !/3 players/.test(report.catanRules) || !/accepts or declines/.test(report.catanRules)) throw new Error(`Catan's rules: ${report.catanRules}`);
  await page.click('#rules-close');
  await page.click('.level-button[data-game="catan"][data-level="0"]');
  await page.waitForURL(MATCH);
  await page.waitForFunction(() => window.M && window.M.snap);
  report.catan = await page.evaluate(() => window.M.snap.game);
  if (!/players=3/.test(report.catan) || !/trades=true/.test(report.catan) || !/hidden_hands=true/.test(report.catan)) throw new Error(`the Catan game: ${report.catan}`);
  await page.context().close();
}

// Hot seat: two people at one screen; the page holds both seats and its view follows the mover.
async function checkHotSeat(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(`${base}/?game=tictactoe`);
  await page.waitForSelector('#seats input');
  await page.fill('#seats input[data-seat="1"]', 'human');
  await page.check('#hot');
  await page.click('#start');
  await page.waitForURL(MATCH);
  await page.waitForSelector('#board svg');
  const random = rng(21);
  const viewers = new Set();
  const deadline = Date.now() + 60_000;
  let last = null;
  for (;;) {
    if (Date.now() > deadline) {
      const viewer = await page.evaluate(() => window.M && window.M.viewer);
      throw new Error(`hot seat: not over after 60 s (last seen: ${JSON.stringify(last)}, viewer ${viewer})`);
    }
    const s = await status(page);
    last = s;
    if (s.over) { report.result = s.text; break; }
    if (s.targets > 0) {
      viewers.add(await page.evaluate(() => window.M.viewer));
      await clickTarget(page, random());
    } else await page.waitForTimeout(20);
  }
  report.viewers = [...viewers].sort();
  if (report.viewers.join() !== '0,1') throw new Error(`one screen played as ${report.viewers}`);
  await page.context().close();
}

// The tab's title says when it is the person's move (for a person in another tab), and not
// while the computer moves or once the game is over.
async function checkTurnNotice(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await newGame(page, { name: 'tictactoe', params: {}, seats: ['human', 'random'] });
  const yours = await page.waitForFunction(() => document.title.startsWith('● Your move'), null, { timeout: 10_000 })
    .then(() => true, () => false);
  report.yours = await page.title();
  if (!yours) throw new Error(`the person's move, the tab says: ${report.yours}`);
  const random = rng(5);
  for (let i = 0; i < 40 && !(await status(page)).over; i++) {
    if ((await status(page)).targets > 0) await clickTarget(page, random());
    else await page.waitForTimeout(30);
  }
  report.over = await page.title();
  if (!report.over.startsWith('Game over')) throw new Error(`a finished game, the tab says: ${report.over}`);
  // The banner names the seats in words, not by agent spec, and fits its panel.
  const banner = await page.evaluate(() => {
    const el = document.querySelector('#result');
    return { text: el.textContent, fits: el.scrollWidth <= el.clientWidth };
  });
  report.banner = banner.text;
  if (/\(random\)|seat \d/.test(banner.text) || !/you win|computer wins|draw/i.test(banner.text)) throw new Error(`the banner: ${banner.text}`);
  if (!banner.fits) throw new Error(`the banner overflows: ${banner.text}`);
  report.shot = path.join(outDir, 'finished-rematch.png');
  await page.locator('.match').screenshot({ path: report.shot });
  // Play again: a new match, the person now in the other seat.
  const first = page.url();
  await page.click('#rematch');
  await page.waitForURL((u) => MATCH.test(u.toString()) && u.toString() !== first);
  await page.waitForFunction(() => window.M && window.M.snap && window.M.snap.ply >= 0);
  report.rematch = await page.evaluate(() => window.M.snap.seats.map((x) => x.spec));
  if (report.rematch.join() !== 'random,human') throw new Error(`play again seated: ${report.rematch}`);
  await page.goto(`${base}/`);
  report.home = await page.title();
  if (report.home !== 'meeple') throw new Error(`the front page's tab says: ${report.home}`);
  await page.context().close();
}

// A person resigns: the first click asks, the second gives up; the banner says who resigned and
// who wins, the tab says the game is over, and the game can be played again.
async function checkResign(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await newGame(page, { name: 'connect4', params: {}, seats: ['human', 'random'] });
  // One move of the person's, then the computer's reply: the move is clicked once its targets
  // are drawn (the tab can say "Your move" a moment before), read with the ply in one step.
  for (const deadline = Date.now() + 10_000; ;) {
    if (Date.now() > deadline) throw new Error('no move and reply within 10 s');
    const now = await page.evaluate(() => ({ ply: window.M && window.M.snap ? window.M.snap.ply : -1, yours: document.title.startsWith('● Your move'), targets: document.querySelectorAll('#board [data-t].hl').length }));
    if (now.ply >= 2 && now.yours) break;
    if (now.ply === 0 && now.targets > 0) await clickTarget(page, 0.5);
    else await page.waitForTimeout(30);
  }
  await page.click('#resign');
  report.asked = await page.textContent('#resign');
  if (!/again/i.test(report.asked)) throw new Error(`the first click should ask: ${report.asked}`);
  if (await page.evaluate(() => !!window.M.snap.result)) throw new Error('one click resigned');
  await page.click('#resign');
  await page.waitForSelector('#result', { timeout: 10_000 });
  report.banner = await page.textContent('#result');
  if (!/you resigned; the computer wins/i.test(report.banner)) throw new Error(`the banner: ${report.banner}`);
  report.title = await page.title();
  if (!report.title.startsWith('Game over')) throw new Error(`the tab: ${report.title}`);
  if (!(await page.$('#rematch'))) throw new Error('no Play again after a resignation');
  if (await page.$('#resign')) throw new Error('Resign still offered after the game');
  await page.context().close();
}

// The computer's moves at a chosen pace: with "others' moves" at 0.5 s each, the computers' set-up
// turns in Catan are shown a step at a time (each position for about that long) before the
// person's next placement, where at once they would all appear together.
async function checkPace(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  await newGame(page, { name: 'catan', params: { players: '3' }, seats: ['human', 'random', 'random'] });
  await page.waitForSelector('#pace');
  await page.selectOption('#pace', '500');
  const random = rng(13);
  // The person's first settlement and road.
  while ((await page.evaluate(() => window.M.snap.ply)) < 2 || (await status(page)).targets > 0) {
    if ((await status(page)).targets > 0) await clickTarget(page, random()); else await page.waitForTimeout(20);
    if ((await page.evaluate(() => window.M.log.filter((m) => m.player === 0).length)) >= 2) break;
  }
  const seen = [];
  const start = Date.now();
  for (;;) {
    const s = await page.evaluate(() => ({ ply: window.M.snap.ply, mine: window.M.snap.legal.length > 0, pacing: !!window.M.pacing }));
    if (!seen.length || seen[seen.length - 1].ply !== s.ply) seen.push({ ply: s.ply, at: Date.now() - start });
    if (s.mine && !s.pacing) break;
    if (Date.now() - start > 30_000) throw new Error(`no turn for the person: ${JSON.stringify(seen)}`);
    await page.waitForTimeout(50);
  }
  report.frames = seen;
  // Seat 1's settlement and road, seat 2's two of each, seat 1's again: six frames shown.
  if (seen.length < 5) throw new Error(`the computers' moves were not shown one by one: ${JSON.stringify(seen)}`);
  if (seen[seen.length - 1].at < 2000) throw new Error(`the frames went by too fast: ${JSON.stringify(seen)}`);
  await page.context().close();
}

// Analysis in words, with the line it expects and an arrow on the board: Santorini's advisor
// (alpha-beta) draws the worker's way and its build and says the reply it expects; in connect four
// an MCTS asked for also rates the move, as a chance to win.
async function checkAnalysis(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  await newGame(page, { name: 'santorini', params: {}, seats: ['human', 'random'] });
  const random = rng(31);
  for (;;) {
    // Read in one step, so that the person's first move is never clicked by this loop.
    const now = await page.evaluate(() => ({ placed: window.M.snap.view.phase !== 'place' && window.M.snap.legal.length > 0, targets: document.querySelectorAll('#board [data-t].hl, #choices button.hl').length }));
    if (now.placed) break;
    if (now.targets > 0) await clickTarget(page, random()); else await page.waitForTimeout(20);
  }
  await page.keyboard.press('h');
  await page.waitForSelector('#advice', { timeout: 30_000 });
  report.santorini = await page.textContent('#analysis');
  const arrow = await page.evaluate(() => ({ rings: document.querySelectorAll('#board .advice circle').length, lines: document.querySelectorAll('#board .advice line').length }));
  report.santoriniArrow = arrow;
  if (!/^For you: worker \w\d to \w\d/.test(report.santorini) || !/Then: The computer/.test(report.santorini)) throw new Error(`Santorini's advice: ${report.santorini}`);
  if (arrow.rings !== 1 || arrow.lines < 2) throw new Error(`Santorini's arrow: ${JSON.stringify(arrow)}`);
  report.shot = path.join(outDir, 'analysis.png');
  await page.locator('.match').screenshot({ path: report.shot });
  await newGame(page, { name: 'connect4', params: {}, seats: ['human', 'random'] });
  await page.waitForFunction(() => window.M.snap && window.M.snap.legal.length > 0);
  await page.fill('#advisor', 'mcts:iters=3000');
  await page.click('#analyse');
  await page.waitForSelector('#advice', { timeout: 30_000 });
  report.connect4 = await page.textContent('#analysis');
  if (!/a chance to win of \d+%/.test(report.connect4)) throw new Error(`connect four's advice: ${report.connect4}`);
  if ((await page.evaluate(() => document.querySelectorAll('#board .advice circle').length)) !== 1) throw new Error('no ring on the advised column');
  await page.context().close();
}

// The computer's last turn is marked whole (in Catan's set-up: the settlement and its road), in
// a hue that is no seat's colour.
async function checkLastTurn(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  await newGame(page, { name: 'catan', params: { players: '3' }, seats: ['human', 'random', 'random'] });
  const random = rng(9);
  // Place the first settlement and road, then wait for the person's second placement (by the
  // clock, not a count of tries: on a loaded machine the computers' turns come slower).
  for (const deadline = Date.now() + 60_000; ;) {
    if (Date.now() > deadline) throw new Error('no second placement for the person within 60 s');
    // One reading of ply and targets: read apart, the computers could reach the person's second
    // placement between them, and the check would place it itself and then find its own move last.
    const now = await status(page);
    if (now.ply >= 8 && now.targets > 0) break;
    if (now.targets > 0) await clickTarget(page, random());
    else await page.waitForTimeout(30);
  }
  const marked = await page.evaluate(() => {
    const els = [...document.querySelectorAll('#board .last')];
    return { targets: [...new Set(els.map((e) => e.dataset.t))], stroke: els.length ? getComputedStyle(els[0]).stroke : null, colours: PLAYER_COLOURS };
  });
  report.marked = marked.targets;
  report.stroke = marked.stroke;
  if (marked.targets.length < 2) throw new Error(`the computer's set-up turn marked: ${JSON.stringify(marked.targets)}`);
  const rgb = (hex) => `rgb(${parseInt(hex.slice(1, 3), 16)}, ${parseInt(hex.slice(3, 5), 16)}, ${parseInt(hex.slice(5, 7), 16)})`;
  if (marked.colours.map(rgb).includes(marked.stroke)) throw new Error(`the mark is a seat's colour: ${marked.stroke}`);
  // Other seats' hands are counts at a person's table, not their cards.
  const others = await page.evaluate(() => [...document.querySelectorAll('.player-box')].filter((b) => b.dataset.t !== `s:${window.M.viewer}`).map((b) => b.textContent));
  report.others = others.map((t) => t.slice(0, 80));
  report.shot = path.join(outDir, 'catan-last-turn.png');
  await page.locator('.match').screenshot({ path: report.shot });
  if (others.some((t) => /(brick|lumber|wool|grain|ore) \d/.test(t))) throw new Error(`another seat's cards shown: ${others.join(' | ')}`);
  await page.context().close();
}

// A seed above 2^53, chosen in the Advanced form for a match of agents: the page shows the very
// seed that deals the game (a JavaScript number would have rounded it on the way in and out).
async function checkBigSeed(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const seed = '10892928623672112120';
  await page.goto(`${base}/?game=tictactoe`);
  await page.waitForSelector('#seats input');
  await page.fill('#seats input[data-seat="0"]', 'random');
  await page.fill('#seats input[data-seat="1"]', 'random');
  await page.fill('#seed', seed);
  await page.click('#start');
  await page.waitForURL(MATCH);
  await page.waitForFunction(() => /seed \d+/.test(document.querySelector('#where').textContent), null, { timeout: 30_000 });
  report.shown = await page.evaluate(() => document.querySelector('#where').textContent);
  if (!report.shown.includes(`seed ${seed}`)) throw new Error(`chose seed ${seed}, the page shows: ${report.shown}`);
  await page.context().close();
}

// Two people at Sagrada, whose private objectives are secret: the creator starts it with "Play a
// friend" and sends the link; the friend's page claims seat 1. The creator's page holds no token
// of seat 1, is refused its view, and never shows its private colour.
async function checkSecrets(browser, report) {
  const a = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  const b = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  await a.goto(`${base}/`);
  await a.click('button.friend[data-game="sagrada"]');
  await a.waitForFunction(() => /\/m\//.test(location.pathname) || document.querySelector('[data-error="sagrada"]').textContent);
  const refusedStart = await a.evaluate(() => document.querySelector('[data-error="sagrada"]') && document.querySelector('[data-error="sagrada"]').textContent);
  if (refusedStart) throw new Error(`the match was not started: ${refusedStart}`);
  await a.waitForURL(MATCH);
  await a.waitForSelector('input.join[data-seat="1"]');
  const link = await a.inputValue('input.join[data-seat="1"]');
  await b.goto(link);
  await b.waitForSelector('#board svg');
  await b.waitForFunction(() => window.M.snap && window.M.viewer === 1 && window.M.snap.view.players[1].private);
  const theirs = await b.evaluate(() => window.M.snap.view.players[1].private);
  const mine = await a.evaluate(() => window.M.snap.view.players[0].private);
  if (!theirs || !mine || theirs === mine) throw new Error(`private objectives ${mine} and ${theirs}`);
  // The windows to choose from are drawn (colours and shades), not named on buttons.
  const windows = await b.evaluate(() => [...document.querySelectorAll('#board svg.window-offer')].map((w) => ({ t: w.dataset.t, cells: w.querySelectorAll('rect').length })));
  report.windows = windows;
  if (windows.length < 2 || windows.some((w) => w.cells < 20 || !/^btn:window:\d$/.test(w.t))) throw new Error(`the windows offered: ${JSON.stringify(windows)}`);
  const named = await b.evaluate(() => [...document.querySelectorAll('#choices button')].map((x) => x.textContent).filter((x) => /window/.test(x)));
  if (named.length) throw new Error(`windows chosen by name: ${named}`);
  await b.locator('.match').screenshot({ path: path.join(outDir, 'sagrada-window-choice.png') });
  // The creator's page once the seat is claimed: its invitation is gone, and it has no way in.
  await a.waitForFunction(() => !document.querySelector('input.join[data-seat="1"]'));
  const held = await a.evaluate((id) => JSON.parse(localStorage.getItem('meeple.match.' + id)), a.url().match(MATCH)[1]);
  if (held.tokens['1']) throw new Error('the creator holds seat 1\'s token');
  await a.selectOption('#viewer', '1');
  await a.waitForFunction(() => !document.querySelector('#message').hidden);
  const refused = await a.evaluate(() => document.querySelector('#message').textContent);
  const text = await a.evaluate(() => document.body.innerText + JSON.stringify(window.M.snap));
  if (text.includes(`private ${theirs}`) || text.includes(`"private":"${theirs}"`)) throw new Error(`the creator's page shows seat 1's private objective ${theirs}`);
  report.refused = refused;
  report.secrets = { creator: mine, friend: theirs };
  report.shot = path.join(outDir, 'two-players-secret.png');
  await b.locator('.match').screenshot({ path: report.shot });
  await a.context().close();
  await b.context().close();
}

// A match made from the new-game form (`game.params`, `game.seats`, `game.seed`, an optional
// `game.moveTime`), seen at one screen (hot seat) or also by a second browser that joins seat 1
// by its link. Page errors go to `problems`. Returns the pages, the creator's first.
async function openShared(browser, problems, hot, game) {
  const open = async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    return page;
  };
  const a = await open();
  await a.goto(`${base}/?game=${game.name}`);
  await a.waitForSelector('#seats input');
  for (const [k, v] of Object.entries(game.params)) {
    await a.fill(`#param-${k}`, v);
    await a.dispatchEvent(`#param-${k}`, 'change');
  }
  await a.waitForFunction((n) => document.querySelectorAll('#seats input').length === n, game.seats.length);
  for (let i = 0; i < game.seats.length; i++) await a.fill(`#seats input[data-seat="${i}"]`, game.seats[i]);
  await a.fill('#seed', String(game.seed));
  if (game.moveTime) await a.fill('#move-time', game.moveTime);
  if (hot) await a.check('#hot');
  await a.click('#start');
  await a.waitForURL(MATCH);
  await a.waitForSelector('#board svg');
  const pages = [a];
  if (!hot) {
    const b = await open();
    await b.goto(await a.inputValue('input.join[data-seat="1"]'));
    await b.waitForSelector('#board svg');
    pages.push(b);
  }
  return pages;
}

// Catan with trading between players, two people and catan-value, at one screen (hot seat) or
// through a join link: the people build offers in the page's builder (a generous two for one)
// and trade with the agent when it accepts, and accept every offer the agent makes them. There
// must be a trade each way between a person and the agent, and the record must replay. The agent
// offers only what it expects a seat to take, and how the people's random clicks interleave with
// its moves depends on timing, so a game may pass without its offer to a person: then another
// game (another seed) is played, at most three, and the trades of all count.
async function checkCatanTrades(browser, report, hot) {
  const trades = [];
  let game = null;
  for (let n = 0; n < 3; n++) {
    if (game) for (const p of game.pages) await p.context().close();
    game = await playCatanTrades(browser, report, hot, n);
    trades.push(...game.trades);
    report.games = n + 1;
    if (trades.some(([p, q]) => p !== 2 && q === 2) && trades.some(([p, q]) => p === 2 && q !== 2)) break;
  }
  const { a, pages, problems, text } = game;
  report.result = text;
  report.trades = trades;
  report.personToAgent = trades.filter(([p, q]) => p !== 2 && q === 2).length;
  report.agentToPerson = trades.filter(([p, q]) => p === 2 && q !== 2).length;
  report.viewers = hot ? 'one screen' : 'join link';
  if (!report.personToAgent || !report.agentToPerson) throw new Error(`catan trades: ${report.personToAgent} trades offered by a person and ${report.agentToPerson} by the agent in ${report.games} games`);
  const words = await a.evaluate(() => document.querySelector('#moves').innerText);
  if (!/trade .* with seat \d/.test(words)) throw new Error('the log does not tell the trades in words');
  report.shot = path.join(outDir, `catan-trades-${hot ? 'hot' : 'join'}.png`);
  await a.locator('.match').screenshot({ path: report.shot });
  await checkReplay(a, report);
  if (problems.length) throw new Error(problems.join('; '));
  for (const p of pages) await p.context().close();
}

async function playCatanTrades(browser, report, hot, n) {
  const problems = [];
  const pages = await openShared(browser, problems, hot, {
    name: 'catan', params: { players: '3', points: '5', trades: 'true' }, seats: ['human', 'human', 'catan-value'],
    seed: (hot ? 11 : 12) + 2 * n, moveTime: '300',
  });
  const a = pages[0];
  const random = rng((hot ? 31 : 32) + 2 * n);
  const log = new Map();
  const offeredAt = new Set();
  const deadline = Date.now() + 300_000;
  let text = null;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`catan trades: not over after 300 s (${JSON.stringify([...log.values()].filter((m) => /^with:/.test(m.text)))})`);
    for (const p of pages) for (const m of await p.evaluate(() => window.M.log || [])) log.set(m.ply, m);
    const states = await Promise.all(pages.map((p) => status(p)));
    if (states.every((st) => st.over)) { text = states[0].text; break; }
    const k = states.findIndex((st) => st.targets > 0);
    if (k < 0 || states.filter((st) => st.targets > 0).length > 1) { await a.waitForTimeout(20); continue; }
    const page = pages[k];
    const seen = await page.evaluate(() => {
      const s = window.M.snap, o = s.view.trade.offer;
      const hl = (q) => !!document.querySelector(`#board ${q}.hl`);
      return { ply: s.ply, turn: s.view.turns, from: o ? o.from : null, accepted: o ? o.accepted : [], accept: hl('[data-t="btn:accept"]'), builder: !!document.querySelector('#trade-builder'), me: window.M.viewer, hands: s.view.players.map((pl) => pl.hand) };
    });
    try {
      if (seen.accept && !report.offerShot) {
        report.offerShot = path.join(outDir, `catan-offer-${hot ? 'hot' : 'join'}.png`);
        await page.locator('.match').screenshot({ path: report.offerShot });
      }
      if (seen.accept) {
        // The agent's offers are taken; a person's offer to the other person is declined, so
        // that the trades counted are with the agent.
        await page.click(seen.from === 2 ? '#offer-card [data-t="btn:accept"]' : '#offer-card [data-t="btn:decline"]', { timeout: 5000 });
      } else if (seen.accepted.length && seen.from === seen.me) {
        await page.click(`#offer-card [data-t="btn:with:${seen.accepted.includes(2) ? 2 : seen.accepted[0]}"]`, { timeout: 5000 });
      } else if (seen.builder && !offeredAt.has(`${seen.me}:${seen.turn}`)) {
        offeredAt.add(`${seen.me}:${seen.turn}`);
        const mine = seen.hands[seen.me], theirs = seen.hands[2];
        const give = mine.indexOf(Math.max(...mine));
        const wants = theirs.map((c, r) => (r === give ? -1 : c));
        const get = wants.indexOf(Math.max(...wants));
        if (mine[give] >= 2 && wants[get] > 0) {
          const R = ['brick', 'lumber', 'wool', 'grain', 'ore'];
          for (let i = 0; i < 2; i++) await page.click(`#trade-builder button.step[data-side="give"][data-k="${give}"][data-d="1"]`);
          await page.click(`#trade-builder button.step[data-side="get"][data-k="${get}"][data-d="1"]`);
          const made = await page.$('#make-offer:not([disabled])');
          if (made && !report.builderShot) {
            report.builderShot = path.join(outDir, `catan-builder-${hot ? 'hot' : 'join'}.png`);
            await page.locator('.match').screenshot({ path: report.builderShot });
          }
          if (made) {
            await made.click();
            report.offers = (report.offers || 0) + 1;
          } else report.refusedDrafts = `${R[give]}+${R[give]}>${R[get]}`;
        }
      } else await clickTarget(page, random());
    } catch (e) {
      if (!/not attached|detached|Timeout/.test(String(e))) throw e;
    }
  }
  const trades = [...log.values()].filter((m) => /^with:\d$/.test(m.text)).map((m) => [m.player, Number(m.text.slice(5))]);
  return { a, pages, problems, text, trades };
}

// Santorini with gods, between two people at one screen (Atlas against Demeter) or through a
// join link (Prometheus against Artemis): the god cards show their powers, the people click the
// steps (an optional step's button half the time it is offered), the game ends and its record
// replays. Each power's optional step must have been taken at least once.
async function checkSantoriniGods(browser, report, hot) {
  const gods = hot ? 'atlas+demeter' : 'prometheus+artemis';
  const problems = [];
  const pages = await openShared(browser, problems, hot, { name: 'santorini', params: { gods }, seats: ['human', 'human'], seed: hot ? 21 : 22 });
  const a = pages[0];
  report.cards = await a.evaluate(() => [...document.querySelectorAll('.god b')].map((e) => e.textContent));
  const want = gods.split('+').map((g) => g[0].toUpperCase() + g.slice(1));
  if (JSON.stringify(report.cards) !== JSON.stringify(want)) throw new Error(`god cards ${JSON.stringify(report.cards)}, not ${JSON.stringify(want)}`);
  report.cardShot = path.join(outDir, `santorini-gods-${hot ? 'hot' : 'join'}-cards.png`);
  await a.locator('.match').screenshot({ path: report.cardShot });
  const random = rng(hot ? 41 : 42);
  const deadline = Date.now() + 240_000;
  const log = new Map();
  let text = null;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`santorini gods: not over after 240 s: ${JSON.stringify(await a.evaluate(() => ({ ply: window.M.snap.ply, sel: window.M.sel, mode: window.M.mode, next: [...nextTargets()], legal: window.M.snap.legal.length, status: window.M.snap.status })))}`);
    for (const p of pages) for (const m of await p.evaluate(() => window.M.log || [])) log.set(m.ply, m);
    const states = await Promise.all(pages.map((p) => status(p)));
    if (states.every((st) => st.over)) { text = states[0].text; break; }
    const movers = states.map((st, i) => [st, i]).filter(([st]) => st.targets > 0);
    if (movers.length !== 1) { await a.waitForTimeout(20); continue; }
    const page = pages[movers[0][1]];
    const optional = await page.$$('#modes button.mode:not(.on), #choices button.hl[data-choice="btn:end"]');
    try {
      if (optional.length && random() < 0.5) await optional[Math.floor(random() * optional.length)].click({ timeout: 5000 });
      else await clickTarget(page, random());
    } catch (e) {
      if (!/not attached|detached|Timeout/.test(String(e))) throw e;
    }
  }
  const texts = [...log.values()].sort((x, y) => x.ply - y.ply);
  report.result = text;
  report.steps = texts.length;
  // Each power's optional step, read from the record's notation.
  const taken = {
    atlas: texts.some((m) => m.player === 0 && /\^$/.test(m.text)),
    demeter: texts.some((m, i) => m.player === 1 && /\+/.test(m.text) && i > 0 && texts[i - 1].player === 1 && /\+/.test(texts[i - 1].text)),
    prometheus: texts.some((m, i) => m.player === 0 && /\+/.test(m.text) && i + 1 < texts.length && texts[i + 1].player === 0 && /-/.test(texts[i + 1].text)),
    artemis: texts.some((m, i) => m.player === 1 && /-/.test(m.text) && i > 0 && texts[i - 1].player === 1 && /-/.test(texts[i - 1].text)),
  };
  report.optional = Object.fromEntries(gods.split('+').map((g) => [g, taken[g]]));
  report.viewers = hot ? 'one screen' : 'join link';
  if (!Object.values(report.optional).every(Boolean)) throw new Error(`santorini gods: an optional step was never taken: ${JSON.stringify(report.optional)}`);
  report.shot = path.join(outDir, `santorini-gods-${hot ? 'hot' : 'join'}.png`);
  await a.locator('.match').screenshot({ path: report.shot });
  await checkReplay(a, report);
  if (problems.length) throw new Error(problems.join('; '));
  for (const p of pages) await p.context().close();
}

// Two people at Sagrada at one screen: once seat 0 has placed a die and seat 1 is to move (the
// view follows seat 1), seat 0's last die is marked on seat 0's window, not on seat 1's.
async function checkSagradaMarker(browser, report) {
  const problems = [];
  const [page] = await openShared(browser, problems, true, { name: 'sagrada', params: {}, seats: ['human', 'human'], seed: 24 });
  const random = rng(24);
  for (const deadline = Date.now() + 60_000; ;) {
    if (Date.now() > deadline) throw new Error('seat 0 placed no die within 60 s');
    const s = await page.evaluate(() => ({ placed: window.M.snap.view.players[0].dice.some((d) => d), viewer: window.M.viewer, mover: window.M.snap.turn.player }));
    if (s.placed && s.viewer === 1 && s.mover === 1) break;
    // Seat 0 drafts and places rather than passing: a die in the pool, then a space.
    const die = await page.$('#board [data-t^="d:"].hl');
    if (die && random() < 0.9) await die.click().catch(() => {}); else await clickTarget(page, random());
    await page.waitForTimeout(30);
  }
  const marked = await page.evaluate(() => [...document.querySelectorAll('#board .last')].map((e) => e.dataset.owner));
  report.marked = marked;
  if (!marked.length || marked.some((o) => o !== '0')) throw new Error(`seat 0's die marked on windows ${JSON.stringify(marked)}`);
  report.shot = path.join(outDir, 'sagrada-marker.png');
  await page.locator('.match').screenshot({ path: report.shot });
  if (problems.length) throw new Error(problems.join('; '));
  await page.context().close();
}

// A god's optional step is a click on the board, with a bar saying what a click on a square
// does where it could do two things: Prometheus (seat 0) builds first by switching the bar, then
// moves; Artemis (seat 1) builds by default after her move, and moves again by switching it.
// Nothing is a long text button below the board.
async function checkGodSteps(browser, report) {
  const problems = [];
  const [page] = await openShared(browser, problems, true, { name: 'santorini', params: { gods: 'prometheus+artemis' }, seats: ['human', 'human'], seed: 23 });
  const ply = () => page.evaluate(() => window.M.snap.ply);
  const click = async (t) => {
    const before = await page.evaluate(() => `${window.M.snap.ply}/${window.M.sel.length}`);
    await page.click(`#board [data-t~="${t}"].hl`, { timeout: 10_000 });
    await page.waitForFunction((b) => !window.M.busy && `${window.M.snap.ply}/${window.M.sel.length}` !== b, before, { timeout: 10_000 });
  };
  for (const c of ['c:b2', 'c:d2', 'c:b4', 'c:d4']) await click(c);
  // Prometheus: a worker, then the bar offers moving or building first on the squares that take both.
  await click('w:b2');
  const bar = await page.evaluate(() => [...document.querySelectorAll('#modes .mode')].map((b) => `${b.textContent}${b.classList.contains('on') ? ' (on)' : ''}`));
  report.prometheusBar = bar;
  if (!bar.some((t) => /moves \(on\)/.test(t)) || !bar.some((t) => /builds first/.test(t))) throw new Error(`Prometheus's bar: ${JSON.stringify(bar)}`);
  const long = await page.$$eval('#choices button[data-choice]', (bs) => bs.map((b) => b.textContent));
  if (long.length) throw new Error(`buttons below the board: ${JSON.stringify(long)}`);
  report.stepShot = path.join(outDir, 'santorini-gods-step.png');
  await page.locator('.match').screenshot({ path: report.stepShot });
  await page.click('#modes .mode[data-mode="b"]');
  const at = await ply();
  await click('b:c2');
  const built = await page.evaluate((k) => window.M.log.filter((m) => m.ply > k).map((m) => m.words), at);
  report.prometheus = built;
  if (!built.some((w) => /before moving/.test(w))) throw new Error(`Prometheus built first? ${JSON.stringify(built)}`);
  // Then the worker moves (not up) and builds.
  await click('w:b2');
  await click('m:a1');
  await click('b:a2');
  // Artemis: after her move the bar's default builds; switched, the same square is a second move.
  await click('w:b4');
  await click('m:b5');
  const artemis = await page.evaluate(() => [...document.querySelectorAll('#modes .mode')].map((b) => `${b.textContent}${b.classList.contains('on') ? ' (on)' : ''}`));
  report.artemisBar = artemis;
  if (!artemis.some((t) => /builds a block \(on\)/.test(t)) || !artemis.some((t) => /moves again/.test(t))) throw new Error(`Artemis's bar: ${JSON.stringify(artemis)}`);
  await page.click('#modes .mode[data-mode="m"]');
  const before = await ply();
  await click('m:c5');
  const moved = await page.evaluate((k) => window.M.log.filter((m) => m.ply > k).map((m) => m.words), before);
  report.artemis = moved;
  if (!moved.some((w) => /moves again, to c5/.test(w))) throw new Error(`Artemis moved again? ${JSON.stringify(moved)}`);
  if (problems.length) throw new Error(problems.join('; '));
  await page.context().close();
}

// A game in progress is still there, at the same ply and with the same seat, after the server
// restarts; the person plays on.
async function checkRestart(browser, report) {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await newGame(page, { name: 'connect4', params: {}, seats: ['human', 'mcts:iters=100'] });
  const random = rng(5);
  while ((await page.evaluate(() => window.M.snap.ply)) < 4) {
    const s = await status(page);
    if (s.targets > 0) await clickTarget(page, random());
    else await page.waitForTimeout(20);
  }
  // The last click may have landed on a target the page drew for ply 4 after the loop read a
  // lower ply: wait until no move is being sent and it is the person's turn again.
  await page.waitForFunction(() => !window.M.busy && window.M.snap.legal.length > 0);
  const before = await page.evaluate(() => ({ ply: window.M.snap.ply, view: JSON.stringify(window.M.snap.view) }));
  console.log('RESTART');
  const answer = await input.next();
  if (answer.value !== 'ok') throw new Error(`the server did not restart: ${answer.value}`);
  await page.reload();
  await page.waitForSelector('#board svg');
  await page.waitForFunction(() => window.M.snap && window.M.snap.legal.length > 0);
  const after = await page.evaluate(() => ({ ply: window.M.snap.ply, view: JSON.stringify(window.M.snap.view) }));
  if (after.ply !== before.ply || after.view !== before.view) throw new Error(`after the restart the game is at ply ${after.ply}, not ${before.ply}`);
  // The reloaded page draws its targets a moment after its state arrives (later on a loaded
  // machine): click once there is one.
  let clicked = false;
  for (let i = 0; i < 200 && !clicked; i++) {
    clicked = await clickTarget(page, 0.5);
    if (!clicked) await page.waitForTimeout(50);
  }
  if (!clicked) throw new Error('after the restart the page offers no move to click');
  await page.waitForFunction((p) => window.M.snap.ply > p, before.ply);
  report.before = before.ply;
  report.after = await page.evaluate(() => window.M.snap.ply);
  await page.context().close();
}

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  let failed = false;
  for (const [k, game] of GAMES.entries()) {
    const report = { game: game.name };
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
    try {
      await page.evaluate(() => 0);
      await newGame(page, game);
      report.result = await playToEnd(page, game, rng(1000 + k), report);
      report.shot = path.join(outDir, `${game.name}.png`);
      await page.locator('.match').screenshot({ path: report.shot });
      await checkReplay(page, report);
      if (game.name === 'santorini') await checkPhone(browser, report);
      const real = problems.filter((p) => !/status of 40[39]/.test(p));
      if (real.length) throw new Error(real.join('; '));
      console.log(JSON.stringify(report));
    } catch (e) {
      failed = true;
      report.error = String(e && e.stack || e);
      try { await page.screenshot({ path: path.join(outDir, `${game.name}-failure.png`) }); } catch (_) { /* the page is gone */ }
      console.log(JSON.stringify(report));
    }
    await page.close();
    if (failed) break;
  }
  const trades = [['catan-trades-hot', (b, r) => checkCatanTrades(b, r, true)], ['catan-trades-join', (b, r) => checkCatanTrades(b, r, false)]];
  const gods = [['santorini-gods-hot', (b, r) => checkSantoriniGods(b, r, true)], ['santorini-gods-join', (b, r) => checkSantoriniGods(b, r, false)]];
  for (const [name, check] of [['front', checkFront], ['variants', checkVariants], ['two-players', checkTwoPlayers], ['hot-seat', checkHotSeat], ['big-seed', checkBigSeed], ['turn-notice', checkTurnNotice], ['resign', checkResign], ['pace', checkPace], ['phone-catan', checkPhoneCatan], ['analysis', checkAnalysis], ['last-turn', checkLastTurn], ['secrets', checkSecrets], ...trades, ...gods, ['god-steps', checkGodSteps], ['sagrada-marker', checkSagradaMarker], ['restart', checkRestart]]) {
    if (failed || (process.env.GAMES && !process.env.GAMES.split(',').includes(name))) continue;
    const report = { check: name };
    try {
      await check(browser, report);
    } catch (e) {
      failed = true;
      report.error = String(e && e.stack || e);
    }
    console.log(JSON.stringify(report));
  }
  await browser.close();
  process.exit(failed ? 1 : 0);
})();
