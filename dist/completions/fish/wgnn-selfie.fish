complete -c wgnn-selfie -l camera -d 'Read a camera (V4L2), /dev/video0 when no device is given' -r -F
complete -c wgnn-selfie -s i -l input -d 'Read a video or image file (anything GStreamer decodes)' -r -F
complete -c wgnn-selfie -l effect -d 'What to do with the background' -r -f -a "blur\t''
replace\t''
mask\t''
none\t''"
complete -c wgnn-selfie -l blur -d 'Background blur strength (Gaussian sigma in pixels, 0.5 to 64; 12 when not given) for --effect blur, which it needs' -r
complete -c wgnn-selfie -l background -d 'Background for --effect replace (which it needs): #RRGGBB, a colour name (black, white, grey, red, green, blue, transparent) or an image file' -r
complete -c wgnn-selfie -l model -d 'Segmentation model file (default: the bundled MediaPipe model)' -r -F
complete -c wgnn-selfie -l device -d 'Where the model runs: auto is a hardware GPU, else the CPU (also where the only GPU is a software one; --device gpu uses it anyway)' -r -f -a "auto\t'A hardware GPU; the CPU when there is none or only a software one'
gpu\t'The GPU, even a software rasteriser (lavapipe); fail without one'
cpu\t'The CPU context: system memory only'"
complete -c wgnn-selfie -l precision -d 'What the model computes in: auto is float16 where the GPU has SHADER_F16 and the mask stays within 1% (RMS) of float32\'s on a probe input, else float32' -r -f -a "auto\t''
f32\t''
f16\t''"
complete -c wgnn-selfie -l smoothing -d 'Temporal smoothing of the mask against flicker (0 = off, up to 0.95)' -r
complete -c wgnn-selfie -s o -l output -d 'Write the result: FILE.mp4 (H.264), FILE.mkv (H.264), or a PNG sequence like frames/%05d.png (one frame number: %d or %0Nd; %% for a percent sign). A symbolic link is written through (the file it leads to is replaced); a device or a FIFO is refused' -r -F
complete -c wgnn-selfie -l width -d 'Scale the input to this size first (both or neither)' -r
complete -c wgnn-selfie -l height -d 'Scale the input to this height first (with --width)' -r
complete -c wgnn-selfie -l frames -d 'Stop after this many frames' -r
complete -c wgnn-selfie -l generate -d 'Print the manual page (man) or a shell completion script (bash, zsh, fish) and exit' -r -f -a "man\t'The manual page (roff, for man(1))'
bash\t'A bash completion script'
zsh\t'A zsh completion script'
fish\t'A fish completion script'"
complete -c wgnn-selfie -l test-pattern -d 'Read GStreamer\'s moving test pattern'
complete -c wgnn-selfie -l landscape -d 'Use the bundled landscape model (144x256, faster, for 16:9 input)'
complete -c wgnn-selfie -l window -d 'Show the result in a window'
complete -c wgnn-selfie -l overwrite -d 'Write wgnn-selfie.mp4 (the output without --output), replacing it when it exists (without this, an existing one is refused)'
complete -c wgnn-selfie -l null -d 'Process as fast as possible and throw the result away (benchmarks)'
complete -c wgnn-selfie -s q -l quiet -d 'No statistics or progress on stderr'
complete -c wgnn-selfie -s h -l help -d 'Print help (see more with \'--help\')'
complete -c wgnn-selfie -s V -l version -d 'Print version'
