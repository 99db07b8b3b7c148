// The toolbar button opens the extension's page, which computes (page.js).
chrome.action.onClicked.addListener(() => chrome.tabs.create({ url: chrome.runtime.getURL('page.html') }));
