// Headless Chromium (Debian's) driven by playwright-core through the hosted connect page as an end
// user would use it. SCENARIO picks the walk; screenshots go to ARTIFACTS; the last line printed is
// the JSON of what was seen. playwright-core comes from tests/identity/node (NODE_PEERS).
import { createRequire } from 'node:module';
import path from 'node:path';

const { URL: START, SCENARIO, ARTIFACTS, CHROMIUM, NODE_PEERS, API_KEY, RETURN_URL } = process.env;
const { chromium } = createRequire(path.join(NODE_PEERS, 'package.json'))('playwright-core');
const shot = (page, name) => page.screenshot({ path: path.join(ARTIFACTS, `connect-ui-${name}.png`), fullPage: true });
const seen = {};

const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
try {
  const mobile = SCENARIO === 'oauth_mobile';
  const context = await browser.newContext(mobile ? { viewport: { width: 390, height: 800 }, isMobile: true, hasTouch: true } : {});
  const page = await context.newPage();
  if (RETURN_URL) {
    await page.route(`${RETURN_URL}**`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>customer app</h1>' }));
  }
  const response = await page.goto(START);
  seen.status = response.status();
  seen.url = page.url();
  seen.heading = await page.locator('h1').innerText();

  if (SCENARIO === 'api_key') {
    seen.providers = await page.locator('#providers li:visible').allInnerTexts();
    await shot(page, 'providers');
    await page.getByLabel('Search').fill('acme');
    seen.filtered = await page.locator('#providers li:visible').allInnerTexts();
    await page.getByLabel('Search').fill('zzz');
    seen.noMatch = await page.locator('#no-match').isVisible();
    await page.getByLabel('Search').fill('');
    await page.getByLabel('Category').selectOption('productivity');
    seen.byCategory = await page.locator('#providers li:visible').allInnerTexts();
    await page.getByLabel('Category').selectOption('');
    // keyboard only: tab to the provider and press Enter
    await page.getByRole('link', { name: /Acme Keys/ }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/providers\/acmekeys$/);
    seen.stepHeading = await page.locator('h1').innerText();
    seen.labels = await page.locator('form label').allInnerTexts();
    seen.cookieHttpOnly = (await context.cookies()).find((c) => c.name === 'pb_connect')?.httpOnly;
    await shot(page, 'api-key-form');
    await page.getByRole('button', { name: 'Connect' }).click();
    seen.validation = await page.locator('.hint.error').allInnerTexts();
    seen.invalid = await page.getByLabel('API key').getAttribute('aria-invalid');
    await shot(page, 'api-key-validation');
    await page.getByLabel('API key').fill('not-the-key');
    await page.getByLabel('Subdomain').fill('ada-co');
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.waitForLoadState();
    seen.refused = await page.getByRole('alert').innerText();
    seen.subdomainKept = await page.getByLabel('Subdomain').inputValue();
    seen.keyKept = await page.getByLabel('API key').inputValue();
    await shot(page, 'api-key-refused');
    await page.getByLabel('API key').fill(API_KEY);
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.waitForURL(/\/done$/);
    seen.doneHeading = await page.locator('h1').innerText();
    seen.doneText = await page.getByRole('status').innerText();
    await shot(page, 'api-key-connected');
  } else if (SCENARIO === 'oauth') {
    await shot(page, 'oauth-step');
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.getByRole('button', { name: 'Continue with Fake OAuth' }).click()]);
    seen.popupOpened = true;
    await page.waitForURL(/\/done$/);
    await popup.waitForEvent('close', { timeout: 15000 }).catch(() => {});
    seen.popupClosed = popup.isClosed();
    seen.doneHeading = await page.locator('h1').innerText();
    await shot(page, 'oauth-connected');
  } else if (SCENARIO === 'oauth_mobile') {
    let popups = 0;
    context.on('page', () => { popups += 1; });
    await page.getByRole('button', { name: 'Continue with Fake OAuth' }).click();
    await page.waitForURL(/\/done$/);
    seen.popups = popups;
    seen.doneHeading = await page.locator('h1').innerText();
    await shot(page, 'oauth-mobile-connected');
  } else if (SCENARIO === 'helper') {
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.getByRole('button', { name: 'Connect your CRM' }).click()]);
    await popup.waitForURL(/\/providers\/acmekeys$/);
    await popup.getByLabel('API key').fill(API_KEY);
    await popup.getByLabel('Subdomain').fill('ada-co');
    await popup.getByRole('button', { name: 'Connect' }).click();
    await page.waitForFunction(() => document.getElementById('out').textContent !== '', null, { timeout: 20000 });
    seen.result = await page.locator('#out').innerText();
    seen.popupClosed = popup.isClosed();
    await shot(page, 'helper-resolved');
  } else if (SCENARIO === 'expired') {
    seen.alert = await page.getByRole('alert').innerText();
    await shot(page, 'expired');
  } else if (SCENARIO === 'pending') {
    await page.getByLabel('API key').fill(API_KEY);
    await page.getByLabel('Subdomain').fill('ada-co');
    await page.getByRole('button', { name: 'Connect' }).click();
    await page.waitForURL(/\/done$/);
    seen.doneHeading = await page.locator('h1').innerText();
    seen.doneText = await page.getByRole('status').innerText();
    await shot(page, 'pending-approval');
  } else if (SCENARIO === 'reconnect') {
    seen.labels = await page.locator('form label').allInnerTexts();
    await shot(page, 'reconnect-form');
    await page.getByLabel('API key').fill(API_KEY);
    await page.getByLabel('Subdomain').fill('ada-co');
    await page.getByRole('button', { name: 'Reconnect' }).click();
    await page.waitForURL((url) => url.href.startsWith(RETURN_URL));
    seen.returned = page.url();
    await shot(page, 'reconnect-returned');
  }
  seen.headers = response.headers();
  console.log(JSON.stringify(seen));
} finally {
  await browser.close();
}
