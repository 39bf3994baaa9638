// patchbay Connect helper: open the hosted connect page in a popup and get the result.
//
//   <script src="https://patchbay.example.com/connect/ui/static/patchbay-connect.js"></script>
//   PatchbayConnect.open(sessionUrl).then(function (result) {
//     // result: {status: "connected" | "reconnected" | "pending_approval", connectionId, approvalId, endUserId}
//   }, function (error) { /* error.message: "closed" when the user closed the window first */ });
//
// Call open() from a click handler, or the browser blocks the popup.
(function (global) {
  'use strict';

  function open(sessionUrl, options) {
    options = options || {};
    var width = options.width || 520;
    var height = options.height || 720;
    var left = Math.max(0, (global.screenX || 0) + ((global.outerWidth || width) - width) / 2);
    var top = Math.max(0, (global.screenY || 0) + ((global.outerHeight || height) - height) / 2);
    var origin = new URL(sessionUrl, global.location.href).origin;
    return new Promise(function (resolve, reject) {
      var popup = global.open(sessionUrl, 'patchbay-connect', 'popup,width=' + width + ',height=' + height + ',left=' + left + ',top=' + top);
      if (!popup) {
        reject(new Error('blocked'));
        return;
      }
      var watcher = null;
      function finish() {
        global.removeEventListener('message', onMessage);
        global.clearInterval(watcher);
      }
      function onMessage(event) {
        if (event.origin !== origin || event.source !== popup || !event.data || event.data.type !== 'patchbay:connect') return;
        finish();
        popup.close();
        resolve({ status: event.data.status, connectionId: event.data.connectionId || null, approvalId: event.data.approvalId || null,
                  endUserId: event.data.endUserId || null });
      }
      global.addEventListener('message', onMessage);
      watcher = global.setInterval(function () {
        if (popup.closed) {
          finish();
          reject(new Error('closed'));
        }
      }, 400);
    });
  }

  global.PatchbayConnect = { open: open };
})(window);
