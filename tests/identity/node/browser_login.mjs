// Headless Chromium (Debian's) driven by playwright-core through the real login and consent pages,
// with JavaScript disabled: the pages must work without it. Screenshots go to ARTIFACTS.
import { chromium } from 'playwright-core';
import path from 'node:path';

const { AUTH_URL, REDIRECT, EMAIL, PASSWORD, ARTIFACTS, CHROMIUM } = process.env;
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
try {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await page.route(`${REDIRECT}**`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<h1>client callback</h1>' }));
  await page.goto(AUTH_URL);
  const loginTitle = await page.title();
  const loginHeading = await page.locator('h1').innerText();
  const emailLabel = await page.getByLabel('Email').count();
  await page.screenshot({ path: path.join(ARTIFACTS, 'identity-login.png'), fullPage: true });
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  const errorText = await page.getByRole('alert').innerText();
  await page.screenshot({ path: path.join(ARTIFACTS, 'identity-login-error.png'), fullPage: true });
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/consent/);
  const consentHeading = await page.locator('h1').innerText();
  const scopes = await page.locator('ul.scopes li').allInnerTexts();
  await page.screenshot({ path: path.join(ARTIFACTS, 'identity-consent.png'), fullPage: true });
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((url) => url.href.startsWith(REDIRECT));
  const callback = new URL(page.url());
  await page.screenshot({ path: path.join(ARTIFACTS, 'identity-callback.png') });
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'pb_idp_session');
  console.log(JSON.stringify({
    loginTitle, loginHeading, emailLabel, errorText, consentHeading, scopes,
    code: callback.searchParams.get('code'), state: callback.searchParams.get('state'), iss: callback.searchParams.get('iss'),
    sessionCookie: session ? { httpOnly: session.httpOnly, sameSite: session.sameSite } : null,
  }));
} finally {
  await browser.close();
}
