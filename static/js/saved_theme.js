// A page with no script of its own (the ended page) opens in the theme the tab last chose.
if (localStorage.getItem("servescope-theme") === "projector") document.documentElement.dataset.theme = "projector";
