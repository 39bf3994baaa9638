// The hosted connect page's small behaviours; every page also works without them.
(function () {
  'use strict';

  // Provider list: filter as the user types or picks a category.
  var search = document.querySelector('[data-filter="providers"]');
  var category = document.getElementById('category');
  function filter() {
    var words = (search.value || '').trim().toLowerCase();
    var wanted = category ? category.value : '';
    var shown = 0;
    document.querySelectorAll('#providers li').forEach(function (item) {
      var match = item.dataset.search.indexOf(words) !== -1 && (!wanted || item.dataset.categories.split(' ').indexOf(wanted) !== -1);
      item.hidden = !match;
      if (match) shown += 1;
    });
    document.getElementById('no-match').hidden = shown > 0;
  }
  if (search) {
    search.addEventListener('input', filter);
    if (category) category.addEventListener('change', filter);
  }

  // Credential form: say which required field is empty before sending it.
  document.querySelectorAll('form[data-validate]').forEach(function (form) {
    form.addEventListener('submit', function (event) {
      var first = null;
      form.querySelectorAll('input[required]').forEach(function (input) {
        var message = document.getElementById(input.id + '-msg');
        var empty = !input.value.trim();
        input.setAttribute('aria-invalid', empty ? 'true' : 'false');
        message.textContent = empty ? message.dataset.message : '';
        message.className = empty ? 'hint error' : 'hint';
        if (empty && !first) first = input;
      });
      if (first) {
        event.preventDefault();
        first.focus();
      }
    });
  });

  // OAuth step: sign in in a popup that comes back to this page; a whole-page redirect on a phone
  // or when popups are blocked.
  document.querySelectorAll('form[data-oauth]').forEach(function (form) {
    form.addEventListener('submit', function () {
      var phone = window.matchMedia('(max-width: 600px)').matches || /Mobi|Android/i.test(navigator.userAgent);
      var popup = phone ? null : window.open('', 'pb-oauth', 'popup,width=520,height=720');
      form.target = popup ? 'pb-oauth' : '_self';
    });
  });

  // Last page: in the OAuth popup, hand over to the page that opened it; on that page, tell the
  // customer's window that opened it (the JavaScript helper), only at the origin of the session's
  // return URL (no return URL: no message), or go back to the customer's URL.
  var result = document.getElementById('result');
  if (result) {
    var data = JSON.parse(result.dataset.result);
    var opener = window.opener && !window.opener.closed ? window.opener : null;
    var ours = false;
    try {
      ours = opener !== null && opener.location.origin === window.location.origin && opener.location.pathname.indexOf('/connect/ui') === 0;
    } catch (crossOrigin) {
      ours = false;
    }
    if (ours) {
      opener.location.replace(window.location.href);
      window.close();
    } else if (opener && result.dataset.origin) {
      opener.postMessage(Object.assign({ type: 'patchbay:connect' }, data), result.dataset.origin);
    } else if (result.dataset.return) {
      window.location.replace(result.dataset.return);
    }
  }
})();
