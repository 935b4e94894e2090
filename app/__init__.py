"""servescope's web backend: live simulation sessions streamed to browsers over websockets."""
