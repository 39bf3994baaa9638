// A minimal user agent for the tests: follows redirects by hand, keeps cookies, and fills in the
// login and consent forms of patchbay's pages (the real browser test uses Chromium instead).
export class UserAgent {
  constructor() { this.cookies = new Map(); }

  cookieHeader() { return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '); }

  remember(response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const index = pair.indexOf('=');
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      if (/max-age=0/i.test(line) || value === '""' || value === '') this.cookies.delete(name); else this.cookies.set(name, value);
    }
  }

  async request(url, options = {}) {
    const response = await fetch(url, { ...options, redirect: 'manual', headers: { ...(options.headers || {}), cookie: this.cookieHeader() } });
    this.remember(response);
    return response;
  }

  static fields(html) {
    const out = {};
    for (const match of html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)"/g)) out[match[1]] = match[2].replaceAll('&amp;', '&').replaceAll('&#34;', '"').replaceAll('&quot;', '"');
    return out;
  }

  // Follow the authorization until the browser is sent to a URL starting with `stopAt`.
  async authorize(startUrl, stopAt, { email, password }) {
    let url = new URL(startUrl);
    for (let hop = 0; hop < 12; hop++) {
      if (url.href.startsWith(stopAt)) return url;
      const response = await this.request(url);
      if (response.status >= 300 && response.status < 400) { url = new URL(response.headers.get('location'), url); continue; }
      const html = await response.text();
      if (response.status !== 200) throw new Error(`unexpected ${response.status} at ${url}: ${html.slice(0, 300)}`);
      const fields = UserAgent.fields(html);
      let body;
      if (url.pathname.endsWith('/login')) body = new URLSearchParams({ ...fields, email, password });
      else if (url.pathname.endsWith('/consent')) body = new URLSearchParams({ ...fields, decision: 'allow' });
      else throw new Error(`unexpected page ${url}`);
      const posted = await this.request(new URL(url.pathname, url), { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      if (posted.status !== 303) throw new Error(`form at ${url} answered ${posted.status}`);
      url = new URL(posted.headers.get('location'), url);
    }
    throw new Error('too many redirects');
  }
}
